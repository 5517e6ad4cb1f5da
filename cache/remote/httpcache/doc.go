// Package httpcache is cairn's client for a remote cache server speaking the
// Bazel HTTP cache protocol: it moves blobs and action entries between a
// local [cache.Dir] and a server such as bazel-remote or nginx with WebDAV
// PUT, and nothing else.
//
// The main entry point is [New], which returns a [*Client] implementing
// [remote.Backend]; [Open] is the same as a [remote.Factory], which
// cmd/cairn registers for the http and https schemes. The protocol is plain HTTP on two prefixes under a base
// URL (which may itself have a path, as in http://host:8080/team/):
//
//	GET/HEAD/PUT <base>/cas/<sha256 hex>   a blob, raw uncompressed content
//	GET/PUT      <base>/ac/<key hex>       an action entry, opaque bytes
//
// A miss is 404 on GET and HEAD; success is any 2xx (nginx answers 201/204
// to a PUT, bazel-remote 200).
//
// Contracts that hold for every operation:
//
//   - Nothing the server sends is trusted. The client checks framing
//     (Content-Length, Content-Encoding, size limits); the caller hashes every
//     blob and verifies every entry before use. A server that stores any
//     bytes under any name (nginx) can make the caller miss, never use wrong
//     data.
//   - Every request is bounded: [Options.Timeout] to connect and get the
//     response headers, [Options.StallTimeout] for a body that stops
//     moving, and [Options.Retries] retries with short jittered backoff,
//     only before any body byte was handed to the caller.
//   - An unreachable server costs time once: after a connection-level
//     failure outlasts its retries, the client is down for the rest of the
//     process, every later call fails at once with [ErrUnavailable], and
//     [Options.Warn] is called exactly once.
//   - Credentials (CAIRN_REMOTE_HEADER, CAIRN_REMOTE_TOKEN or a netrc entry,
//     see [New]) never appear in an error, a warning or [Client.String]; they
//     are refused over plain http to a host that is not loopback unless
//     [Options.Insecure] is set, and never follow a redirect to another host
//     (redirects to another host are not followed at all).
//   - A [*Client] is safe for concurrent use by many goroutines.
//
// Ordering (blobs before the entry that names them), hashing, quarantine and
// signatures are the caller's job ([remote.Tiered]). Package remotetest holds
// a fault-injecting test server.
package httpcache

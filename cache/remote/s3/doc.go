// Package s3 is cairn's remote cache in an S3 bucket (AWS S3 or any
// S3-compatible store: MinIO, Cloudflare R2, Ceph, Google Cloud Storage's
// interoperability endpoint, versitygw). There is no server to run: the
// bucket is the cache.
//
// The main entry point is [New], which returns a [*Client] implementing the
// remote cache backend interface of package cache. The layout under the
// URL's prefix is the Bazel HTTP cache protocol's, so one bucket can be read
// by both (see cache/FORMAT.md):
//
//	<prefix>/cas/<sha256 hex>   a blob, raw uncompressed content
//	<prefix>/ac/<key hex>       an action entry, opaque bytes
//
// Contracts:
//
//   - Credentials come from the AWS SDK's standard chain only (environment,
//     shared config and credentials files with AWS_PROFILE, SSO, web
//     identity, container and instance metadata); never from the URL or the
//     spec, and the client never prints, logs or stores them. The endpoint
//     comes from AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the shared config
//     (endpoint_url), the region from AWS_REGION or the profile.
//   - Objects are written once: an entry is uploaded with If-None-Match: *,
//     and a store that already holds the key keeps its copy. Every upload
//     carries the content's SHA-256 both as the signed payload hash and as
//     x-amz-checksum-sha256 (per part for multipart uploads), so the store
//     itself refuses damaged bytes. Nothing downloaded is trusted: the
//     caller hashes every blob and checks every entry before use.
//   - Memory does not grow with blob size: small blobs stream through;
//     large ones move as parts of [PartSize], uploaded and downloaded
//     (ranged GETs) in parallel, and one process-wide bound ([Options.Transfers])
//     limits the parts in flight, and so the memory they hold.
//   - Throttling (429, 503 SlowDown) and other 5xx answers and connection
//     failures are retried with jittered exponential backoff that honours
//     Retry-After; a miss (404) and a refusal (403) are not.
//   - Use is recorded without an access time: a remote hit on an entry last
//     written or marked more than a day ago copies the entry onto itself
//     (metadata only), which renews its LastModified. [Client.GC] evicts
//     by that date.
package s3

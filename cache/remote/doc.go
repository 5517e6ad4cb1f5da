// Package remote puts a remote cache behind a local one: [Tiered] answers
// from the local store first and asks the remote only on a miss, verifies
// every download before the local store keeps it, and sends what the local
// store receives on to the remote. Remote backends (one per URL scheme:
// http and https here, each in a package of its own) make themselves known
// through [Register]; [Open] picks one by the URL's scheme.
package remote

package main

import (
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/cache/remote/httpcache"
)

// The remote cache backends, by URL scheme. A new backend is a package
// with a remote.Factory and one line here.
func init() {
	remote.Register("http", httpcache.Open)
	remote.Register("https", httpcache.Open)
}

// openRemote returns the remote cache backend for url, chosen by its
// scheme. Credentials come from the environment (CAIRN_REMOTE_TOKEN,
// CAIRN_REMOTE_HEADER) or netrc.
func openRemote(url string, readOnly, insecure bool, warn func(string)) (remote.Backend, error) {
	return remote.Open(url, remote.Options{ReadOnly: readOnly, Insecure: insecure, Warn: warn})
}

package main

import (
	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
)

// openRemote returns the remote cache client for url. Credentials come from
// the environment (CAIRN_REMOTE_TOKEN, CAIRN_REMOTE_HEADER) or netrc.
func openRemote(url string, readOnly, insecure bool, warn func(string)) (cache.Remote, error) {
	return remote.New(url, remote.Options{ReadOnly: readOnly, Insecure: insecure, Warn: warn})
}

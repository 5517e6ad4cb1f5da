package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/cache/remote/guard"
	"github.com/cairn-run/cairn/cache/remote/httpcache"
	"github.com/cairn-run/cairn/cache/remote/s3"
)

// The remote cache backends, by URL scheme. A new backend is a package
// with a remote.Factory and one line here.
func init() {
	remote.Register("http", httpcache.Open)
	remote.Register("https", httpcache.Open)
	remote.Register("s3", s3.Open)
}

// openRemote returns the remote cache backend for url, chosen by its
// scheme, behind a guard that bounds every operation in time and switches
// the remote off after a few failures (CAIRN_REMOTE_TIMEOUT and
// CAIRN_REMOTE_MIN_RATE tune it); stop ends every transfer at once when
// done. HTTP credentials come from the environment (CAIRN_REMOTE_TOKEN,
// CAIRN_REMOTE_HEADER) or netrc, S3 credentials from the AWS chain.
func openRemote(stop context.Context, url string, readOnly, insecure bool, warn func(string)) (remote.Backend, error) {
	o := guard.Options{Stop: stop, Warn: warn}
	if v := os.Getenv("CAIRN_REMOTE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("CAIRN_REMOTE_TIMEOUT=%q: want a duration such as 10s", v)
		}
		o.Timeout = d
	}
	if v := os.Getenv("CAIRN_REMOTE_MIN_RATE"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("CAIRN_REMOTE_MIN_RATE=%q: want bytes per second, such as 262144", v)
		}
		o.MinRate = n
	}
	b, err := remote.Open(url, remote.Options{ReadOnly: readOnly, Insecure: insecure, Warn: warn})
	if err != nil {
		return nil, err
	}
	return guard.Wrap(b, o), nil
}

// remoteBackend returns the backend behind the guard.
func remoteBackend(r remote.Backend) remote.Backend {
	if g, ok := r.(*guard.Guard); ok {
		return g.Unwrap()
	}
	return r
}

package remote

import (
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOpenByScheme: Open hands a URL to the factory of its scheme, and
// refuses any other scheme naming the known ones, without repeating the
// URL (which may hold a password).
var (
	registerMem sync.Once
	memFactory  Factory
)

func TestOpenByScheme(t *testing.T) {
	var got []string
	factory := func(u *url.URL, o Options) (Backend, error) {
		got = append(got, u.Scheme+" "+u.Host)
		if !o.ReadOnly {
			return nil, errors.New("want read-only")
		}
		return newMemRemote(), nil
	}
	// The registry is the process's: register once however often the
	// test runs (-count).
	registerMem.Do(func() {
		Register("mem", func(u *url.URL, o Options) (Backend, error) { return memFactory(u, o) })
		Register("mem+tls", func(u *url.URL, o Options) (Backend, error) { return memFactory(u, o) })
	})
	memFactory = factory
	tests := map[string]struct {
		url, wantErr string
	}{
		"registered":       {url: "mem://store/team"},
		"other registered": {url: "mem+tls://store"},
		"upper case":       {url: "MEM://store"},
		"unknown":          {url: "ftp://bob:hunter2@host/", wantErr: "remote cache URL: only mem and mem+tls URLs are supported; want mem://host[:port][/prefix] or mem+tls://host[:port][/prefix]"},
		"no scheme":        {url: "bob:hunter2@host", wantErr: "only mem and mem+tls URLs are supported"},
		"empty":            {url: "", wantErr: "only mem and mem+tls URLs are supported"},
		"unparseable":      {url: "mem://bob:hunter2/x@host:x/", wantErr: "remote cache URL: cannot parse it; want mem://"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got = nil
			b, err := Open(tc.url, Options{ReadOnly: true})
			if tc.wantErr == "" {
				if err != nil || b == nil {
					t.Fatalf("Open(%q) = %v, %v", tc.url, b, err)
				}
				u, _ := url.Parse(tc.url)
				if diff := cmp.Diff([]string{u.Scheme + " " + u.Host}, got); diff != "" {
					t.Errorf("factories called (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Open(%q) error %v, want %q", tc.url, err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error repeats the password: %v", err)
			}
			if len(got) != 0 {
				t.Errorf("a factory was called: %v", got)
			}
		})
	}
	if diff := cmp.Diff([]string{"mem", "mem+tls"}, Schemes()); diff != "" {
		t.Errorf("Schemes (-want +got):\n%s", diff)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a scheme twice did not panic")
		}
	}()
	Register("mem", factory)
}

package httpcache

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote/remotetest"
	"github.com/google/go-cmp/cmp"
)

// TestCredentialSources checks which header each credential source sends,
// and their order.
func TestCredentialSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	netrcFile := filepath.Join(dir, "netrc")
	writeFile(t, netrcFile, "machine other.example login x password y\nmachine 127.0.0.1\n  login alice\n  password \"s3cret pass\"\n")
	home := filepath.Join(dir, "home")
	writeFile(t, filepath.Join(home, ".netrc"), "# home netrc\nmachine 127.0.0.1 login bob password hunter22\n")
	defaultOnly := filepath.Join(dir, "default")
	writeFile(t, defaultOnly, "machine other.example login x password y\ndefault login anyone password everywhere\n")
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}

	tests := map[string]struct {
		opts       Options
		env        envMap
		wantHeader http.Header // the credential headers the server receives
		wantSource string
	}{
		"none":                  {wantHeader: http.Header{}},
		"Options.Token":         {opts: Options{Token: "tok-123456"}, wantHeader: http.Header{"Authorization": {"Bearer tok-123456"}}, wantSource: "Options.Token"},
		"Options.Header":        {opts: Options{Header: "x-api-key:  k-123456 "}, wantHeader: http.Header{"X-Api-Key": {"k-123456"}}, wantSource: "Options.Header"},
		"env header":            {env: envMap{"CAIRN_REMOTE_HEADER": "Authorization: Bearer from-env"}, wantHeader: http.Header{"Authorization": {"Bearer from-env"}}, wantSource: "CAIRN_REMOTE_HEADER"},
		"env token":             {env: envMap{"CAIRN_REMOTE_TOKEN": " tok-env \n"}, wantHeader: http.Header{"Authorization": {"Bearer tok-env"}}, wantSource: "CAIRN_REMOTE_TOKEN"},
		"header over token":     {env: envMap{"CAIRN_REMOTE_HEADER": "X-Token: h", "CAIRN_REMOTE_TOKEN": "t"}, wantHeader: http.Header{"X-Token": {"h"}}, wantSource: "CAIRN_REMOTE_HEADER"},
		"option over env":       {opts: Options{Token: "opt"}, env: envMap{"CAIRN_REMOTE_HEADER": "X-Token: h"}, wantHeader: http.Header{"Authorization": {"Bearer opt"}}, wantSource: "Options.Token"},
		"token over netrc":      {env: envMap{"CAIRN_REMOTE_TOKEN": "t", "NETRC": netrcFile}, wantHeader: http.Header{"Authorization": {"Bearer t"}}, wantSource: "CAIRN_REMOTE_TOKEN"},
		"NETRC":                 {env: envMap{"NETRC": netrcFile, "HOME": home}, wantHeader: http.Header{"Authorization": {basic("alice", "s3cret pass")}}, wantSource: "netrc " + netrcFile},
		"HOME/.netrc":           {env: envMap{"HOME": home}, wantHeader: http.Header{"Authorization": {basic("bob", "hunter22")}}, wantSource: "netrc " + filepath.Join(home, ".netrc")},
		"netrc missing":         {env: envMap{"NETRC": filepath.Join(dir, "missing")}, wantHeader: http.Header{}},
		"netrc default ignored": {env: envMap{"NETRC": defaultOnly}, wantHeader: http.Header{}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := remotetest.New(t, remotetest.Options{})
			o := tt.opts
			o.Env = tt.env.get
			o.RetryDelay = 1
			c := newClient(t, srv.URL, o)
			if _, err := c.HasBlob(t.Context(), cache.Digest{1}); err != nil {
				t.Fatal(err)
			}
			got := http.Header{}
			for k, v := range srv.Requests()[0].Header {
				if k == "Authorization" || strings.HasPrefix(k, "X-") {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tt.wantHeader, got); diff != "" {
				t.Errorf("credential headers (-want +got):\n%s", diff)
			}
			if got := c.AuthSource(); got != tt.wantSource {
				t.Errorf("AuthSource() = %q, want %q", got, tt.wantSource)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCredentialErrors checks that bad credential settings are refused
// with a message naming the setting but not its value.
func TestCredentialErrors(t *testing.T) {
	t.Parallel()
	const secret = "SECRETVALUE42"
	tests := map[string]struct {
		env     envMap
		wantErr string
	}{
		"header without colon": {env: envMap{"CAIRN_REMOTE_HEADER": "Bearer " + secret}, wantErr: `CAIRN_REMOTE_HEADER: want one header "Name: value"`},
		"header empty value":   {env: envMap{"CAIRN_REMOTE_HEADER": secret + ":  "}, wantErr: "CAIRN_REMOTE_HEADER: want one header"},
		"header bad name":      {env: envMap{"CAIRN_REMOTE_HEADER": "Auth " + secret + ": x"}, wantErr: "CAIRN_REMOTE_HEADER: want one header"},
		"header newline":       {env: envMap{"CAIRN_REMOTE_HEADER": "Authorization: Bearer " + secret + "\r\nX-Evil: 1"}, wantErr: "CAIRN_REMOTE_HEADER: want one header"},
		"header reserved":      {env: envMap{"CAIRN_REMOTE_HEADER": "Host: " + secret}, wantErr: "header Host is set by the client itself"},
		"token with space":     {env: envMap{"CAIRN_REMOTE_TOKEN": "Bearer " + secret}, wantErr: "CAIRN_REMOTE_TOKEN: the token holds a space"},
		"token with control":   {env: envMap{"CAIRN_REMOTE_TOKEN": secret + "\x00"}, wantErr: "CAIRN_REMOTE_TOKEN: the token holds a space"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := New("https://cache.example.com/", Options{Env: tt.env.get})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error shows the secret: %v", err)
			}
		})
	}
}

// TestPlainHTTP checks that credentials go over plain http only to
// loopback, or with Insecure; without credentials plain http is fine.
func TestPlainHTTP(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		url      string
		token    string
		insecure bool
		wantErr  bool
	}{
		"lan no creds":         {url: "http://cache.lab:9090/"},
		"lan creds":            {url: "http://cache.lab:9090/", token: "tok1234", wantErr: true},
		"lan ip creds":         {url: "http://10.0.0.5/", token: "tok1234", wantErr: true},
		"lan creds insecure":   {url: "http://cache.lab:9090/", token: "tok1234", insecure: true},
		"https creds":          {url: "https://cache.lab/", token: "tok1234"},
		"127.0.0.1 creds":      {url: "http://127.0.0.1:8181/", token: "tok1234"},
		"127.1.2.3 creds":      {url: "http://127.1.2.3/", token: "tok1234"},
		"::1 creds":            {url: "http://[::1]:8181/", token: "tok1234"},
		"localhost creds":      {url: "http://localhost:8181/", token: "tok1234"},
		"LOCALHOST. creds":     {url: "http://LOCALHOST.:8181/", token: "tok1234"},
		"localhost.evil creds": {url: "http://localhost.evil.example/", token: "tok1234", wantErr: true},
		"127.0.0.1.nip.io":     {url: "http://127.0.0.1.nip.io/", token: "tok1234", wantErr: true},
		"0.0.0.0 creds":        {url: "http://0.0.0.0/", token: "tok1234", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.url, Options{Token: tt.token, Insecure: tt.insecure, Env: noEnv})
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(%q) error = %v, want error: %v", tt.url, err, tt.wantErr)
			}
			if err != nil {
				for _, want := range []string{"refusing to send credentials (from Options.Token) over plain http", "--remote-insecure", "https"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
			}
		})
	}
}

// TestNoCredentialLeaks is the remote part of T29: a hostile server echoes
// the credentials back in every place an error message might quote (body,
// reason phrase, Location, Content-Encoding), and the server goes away;
// no error (at any depth of its chain), warning, String or %#v shows them,
// raw or encoded.
func TestNoCredentialLeaks(t *testing.T) {
	canary := randomHex(t)
	password := randomHex(t)
	dir := t.TempDir()
	netrcFile := filepath.Join(dir, "netrc")
	writeFile(t, netrcFile, "machine 127.0.0.1 login user password "+password+"\n")
	secrets := []string{canary, password, base64.StdEncoding.EncodeToString([]byte("user:" + password))}

	hostile := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := r.Header.Get("Authorization") + " " + r.Header.Get("X-Cache-Key")
		// The first byte of the digest or key picks the misbehaviour.
		b, _ := hex.DecodeString(r.URL.Path[len(r.URL.Path)-64:])
		switch b[0] {
		case 0:
			http.Error(w, "internal error, you sent: "+echo, http.StatusInternalServerError)
		case 1:
			http.Error(w, "forbidden for "+echo, http.StatusForbidden)
		case 2:
			conn, buf, _ := w.(http.Hijacker).Hijack()
			fmt.Fprintf(buf, "HTTP/1.1 418 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", echo)
			buf.Flush()
			conn.Close()
		case 3:
			w.Header().Set("Location", "http://"+url.PathEscape(echo)+".evil.example/?leak="+url.QueryEscape(echo))
			w.WriteHeader(http.StatusTemporaryRedirect)
		case 4:
			w.Header().Set("Content-Encoding", echo)
			w.Write([]byte("x"))
		case 5:
			w.Header().Set("Content-Length", "100")
			w.Write([]byte(echo)[:10])
		}
	})
	hostileURL := newHTTPServer(t, hostile)
	closed := "http://" + closedPort(t) + "/"

	var (
		mu   sync.Mutex
		msgs []string
	)
	record := func(s string) { mu.Lock(); msgs = append(msgs, s); mu.Unlock() }
	recordErr := func(err error) {
		for _, e := range errorChain(err) {
			record(e.Error())
		}
	}
	sources := map[string]Options{
		"token":  {Token: canary},
		"header": {Header: "X-Cache-Key: " + canary},
		"netrc":  {Env: envMap{"NETRC": netrcFile}.get},
	}
	for name, o := range sources {
		record(fmt.Sprintf("%v %+v %#v", o, o, o))
		for _, base := range []string{hostileURL, closed} {
			if o.Env == nil {
				o.Env = noEnv
			}
			o.Warn = record
			o.RetryDelay, o.Timeout, o.StallTimeout = 1, testTimeout, testStall
			c, err := New(base, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			record(c.String())
			record(fmt.Sprintf("%v %+v %#v %s", c, c, c, c.AuthSource()))
			for mode := range byte(6) {
				d := cache.Digest{mode}
				rc, err := c.OpenBlob(t.Context(), d)
				recordErr(err)
				if err == nil {
					_, err = io.ReadAll(rc)
					rc.Close()
					recordErr(err)
				}
				_, err = c.HasBlob(t.Context(), d)
				recordErr(err)
				_, err = c.GetEntry(t.Context(), cache.ActionID(d))
				recordErr(err)
				recordErr(c.PutBlob(t.Context(), d, 3, staticBody([]byte("abc"))))
				recordErr(c.PutEntry(t.Context(), cache.ActionID(d), []byte("abc")))
			}
		}
	}
	hits := 0
	for _, m := range msgs {
		for _, s := range secrets {
			for _, enc := range []string{s, base64.StdEncoding.EncodeToString([]byte(s)), hex.EncodeToString([]byte(s)), url.QueryEscape(s)} {
				if strings.Contains(m, enc) {
					hits++
					t.Errorf("message shows a credential: %s", m)
				}
			}
		}
	}
	if len(msgs) < 100 {
		t.Errorf("only %d messages scanned; the test is not exercising the client", len(msgs))
	}
	t.Logf("credential canary: %d messages scanned (errors with their whole chains, warnings, String, %%#v), %d hits", len(msgs), hits)
}

// errorChain returns err and everything it wraps.
func errorChain(err error) []error {
	if err == nil {
		return nil
	}
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, errorChain(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, errorChain(e)...)
		}
	}
	return out
}

func randomHex(t *testing.T) string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

package httpcache

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// credentials is the one header sent with every request, if any. Its
// fields must never be formatted into a message; source says where it
// came from instead.
type credentials struct {
	source string // "" when there are none
	name   string // canonical header name
	value  string
	// secrets are the strings that must never appear in an error or a
	// warning: the value, and the parts of it a server might echo.
	secrets []string
}

// apply sets the credential header on req.
func (a *credentials) apply(req *http.Request) {
	if a.source != "" {
		req.Header.Set(a.name, a.value)
	}
}

// redact replaces every secret in s. Checking every message is cheap and
// covers text a hostile server chose after receiving the credentials.
func (a *credentials) redact(s string) string {
	for _, sec := range a.secrets {
		s = strings.ReplaceAll(s, sec, "[REDACTED]")
	}
	return s
}

// leaks reports whether s contains a secret.
func (a *credentials) leaks(s string) bool {
	for _, sec := range a.secrets {
		if strings.Contains(s, sec) {
			return true
		}
	}
	return false
}

// loadCredentials finds the credentials for host; see [New] for the order.
// Errors name the variable or file at fault, never its content.
// realHome allows falling back to the user's real home directory, which
// tests with their own Env must not do.
func loadCredentials(opts Options, env func(string) string, realHome bool, host string, warn func(string)) (credentials, error) {
	switch {
	case opts.Header != "":
		return headerCredentials("Options.Header", opts.Header)
	case opts.Token != "":
		return tokenCredentials("Options.Token", opts.Token)
	case env("CAIRN_REMOTE_HEADER") != "":
		return headerCredentials("CAIRN_REMOTE_HEADER", env("CAIRN_REMOTE_HEADER"))
	case env("CAIRN_REMOTE_TOKEN") != "":
		return tokenCredentials("CAIRN_REMOTE_TOKEN", env("CAIRN_REMOTE_TOKEN"))
	}
	path := netrcPath(env, realHome)
	if path == "" {
		return credentials{}, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return credentials{}, nil
	}
	if err != nil {
		// A broken netrc should not stop a run that may not need it.
		warn(fmt.Sprintf("warning: remote cache: cannot read netrc file (%v); sending no credentials", err))
		return credentials{}, nil
	}
	m, ok := parseNetrc(string(data)).lookup(host)
	if !ok || m.Login == "" && m.Password == "" {
		return credentials{}, nil
	}
	basic := base64.StdEncoding.EncodeToString([]byte(m.Login + ":" + m.Password))
	return credentials{
		source:  "netrc " + path,
		name:    "Authorization",
		value:   "Basic " + basic,
		secrets: secretsOf(basic, m.Password, url.QueryEscape(m.Password)),
	}, nil
}

// netrcPath returns $NETRC, else ~/.netrc, else "".
func netrcPath(env func(string) string, realHome bool) string {
	if p := env("NETRC"); p != "" {
		return p
	}
	home := env("HOME")
	if home == "" && realHome {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".netrc")
}

func tokenCredentials(source, token string) (credentials, error) {
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsFunc(token, badTokenRune) {
		return credentials{}, fmt.Errorf("%s: the token holds a space or control character; set it to the token alone (it is sent as \"Authorization: Bearer TOKEN\")", source)
	}
	return credentials{
		source:  source,
		name:    "Authorization",
		value:   "Bearer " + token,
		secrets: secretsOf(token, url.QueryEscape(token)),
	}, nil
}

func headerCredentials(source, h string) (credentials, error) {
	name, value, ok := strings.Cut(h, ":")
	value = strings.TrimSpace(value)
	if !ok || !validHeaderName(name) || value == "" || strings.ContainsFunc(value, badValueRune) {
		return credentials{}, fmt.Errorf("%s: want one header \"Name: value\", for example \"Authorization: Bearer TOKEN\" (the value is not shown here)", source)
	}
	switch http.CanonicalHeaderKey(name) {
	case "Host", "Content-Length", "Content-Encoding", "Transfer-Encoding", "Connection", "Accept-Encoding":
		return credentials{}, fmt.Errorf("%s: header %s is set by the client itself; use it for a credential header such as Authorization", source, http.CanonicalHeaderKey(name))
	}
	secrets := []string{value, url.QueryEscape(value)}
	// A scheme-prefixed value ("Bearer x", "Basic x") also leaks as its
	// credential part alone.
	for _, f := range strings.Fields(value) {
		secrets = append(secrets, f, url.QueryEscape(f))
	}
	return credentials{
		source:  source,
		name:    http.CanonicalHeaderKey(name),
		value:   value,
		secrets: secretsOf(secrets...),
	}, nil
}

// secretsOf drops duplicates and strings too short to be worth hiding
// (hiding "Bearer" or "a" would mangle every message and protect nothing).
func secretsOf(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if len(s) < 4 || strings.EqualFold(s, "bearer") || strings.EqualFold(s, "basic") || strings.EqualFold(s, "token") {
			continue
		}
		dup := false
		for _, o := range out {
			dup = dup || o == s
		}
		if !dup {
			out = append(out, s)
		}
	}
	return out
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func badValueRune(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }

func badTokenRune(r rune) bool { return r <= ' ' || r == 0x7f }

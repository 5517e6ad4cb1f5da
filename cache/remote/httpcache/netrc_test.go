package httpcache

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseNetrc(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   string
		want netrc
	}{
		"empty": {in: "", want: nil},
		"one line": {
			in:   "machine host.example login alice password s3cret",
			want: netrc{{Machine: "host.example", Login: "alice", Password: "s3cret"}},
		},
		"multi line, tabs, account": {
			in:   "machine a\n\tlogin u1\n\tpassword p1\n\taccount acc\n\nmachine b login u2 password p2\n",
			want: netrc{{Machine: "a", Login: "u1", Password: "p1", Account: "acc"}, {Machine: "b", Login: "u2", Password: "p2"}},
		},
		"default": {
			in:   "machine a login u password p\ndefault login anon password guest\n",
			want: netrc{{Machine: "a", Login: "u", Password: "p"}, {Default: true, Login: "anon", Password: "guest"}},
		},
		"comments": {
			in:   "# my hosts\nmachine a login u # trailing comment\n  # indented comment password nope\n password p\n",
			want: netrc{{Machine: "a", Login: "u", Password: "p"}},
		},
		"hash inside a value": {
			in:   "machine a login u password #notacomment\n",
			want: netrc{{Machine: "a", Login: "u", Password: "#notacomment"}},
		},
		"quoted": {
			in:   `machine a login "alice smith" password "p \"q\" \\ \t x"` + "\n",
			want: netrc{{Machine: "a", Login: "alice smith", Password: "p \"q\" \\ \t x"}},
		},
		"unterminated quote ends at the line": {
			in:   "machine a password \"abc def\nlogin u\n",
			want: netrc{{Machine: "a", Login: "u", Password: "abc def"}},
		},
		"macdef skipped": {
			in:   "machine a login u\nmacdef init\ncd /pub\nmachine evil password x\n\npassword p\nmachine b login v\n",
			want: netrc{{Machine: "a", Login: "u", Password: "p"}, {Machine: "b", Login: "v"}},
		},
		"macdef at the end": {
			in:   "machine a login u\nmacdef init\nput x",
			want: netrc{{Machine: "a", Login: "u"}},
		},
		"fields before any machine ignored": {
			in:   "login stray password stray\nmachine a login u\n",
			want: netrc{{Machine: "a", Login: "u"}},
		},
		"keyword at the end": {
			in:   "machine a login",
			want: netrc{{Machine: "a"}},
		},
		"unknown tokens ignored": {
			in:   "machine a port 21 login u protocol ftp password p",
			want: netrc{{Machine: "a", Login: "u", Password: "p"}},
		},
		"crlf": {
			in:   "machine a\r\nlogin u\r\npassword p\r\n",
			want: netrc{{Machine: "a", Login: "u", Password: "p"}},
		},
		"quoted keyword is a value-less token": {
			in:   `machine a "login" u password p`,
			want: netrc{{Machine: "a", Password: "p"}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := parseNetrc(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseNetrc(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestNetrcLookup(t *testing.T) {
	t.Parallel()
	n := parseNetrc("machine Cache.Example.com login a password 1\nmachine cache.example.com login b password 2\ndefault login d password 3\n")
	tests := map[string]struct {
		host string
		want string // login, "" for no entry
	}{
		"first match wins, case-insensitive": {host: "cache.example.com", want: "a"},
		"no match, default not used":         {host: "other.example.com", want: ""},
		"no partial match":                   {host: "example.com", want: ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, ok := n.lookup(tt.host)
			if ok != (tt.want != "") || e.Login != tt.want {
				t.Errorf("lookup(%q) = %+v, %v; want login %q", tt.host, e, ok, tt.want)
			}
		})
	}
}

// formatNetrc writes entries back as a netrc file, every value quoted.
func formatNetrc(n netrc) string {
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	var b strings.Builder
	for _, e := range n {
		if e.Default {
			b.WriteString("default")
		} else {
			b.WriteString(`machine "` + q.Replace(e.Machine) + `"`)
		}
		b.WriteString(` login "` + q.Replace(e.Login) + `" password "` + q.Replace(e.Password) + `" account "` + q.Replace(e.Account) + "\"\n")
	}
	return b.String()
}

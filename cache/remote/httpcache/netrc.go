package httpcache

import "strings"

// netrcEntry is one "machine" or "default" entry of a netrc file.
type netrcEntry struct {
	Machine  string // "" for the default entry
	Default  bool
	Login    string
	Password string
	Account  string
}

type netrc []netrcEntry

// parseNetrc reads a netrc file as curl and the go command do: tokens
// separated by white space, "machine NAME" or "default" starting an entry
// that "login", "password" and "account" fill in, "macdef NAME" followed by
// a macro that runs to the next empty line, and "#" starting a comment to the
// end of the line where a keyword is expected. A token may be double-quoted,
// with \" \\ \n \r \t escapes, to hold spaces. It never fails: unknown
// tokens and incomplete entries are ignored, like the tools it copies.
func parseNetrc(data string) netrc {
	var (
		n   netrc
		cur = -1 // index of the entry being filled in
		s   = netrcScanner{s: data}
	)
	for {
		tok, quoted, ok := s.next()
		if !ok {
			return n
		}
		if quoted {
			continue // a quoted keyword is not a keyword
		}
		switch tok {
		case "machine":
			name, _, _ := s.next()
			n = append(n, netrcEntry{Machine: name})
			cur = len(n) - 1
		case "default":
			n = append(n, netrcEntry{Default: true})
			cur = len(n) - 1
		case "login", "password", "account":
			v, _, _ := s.next()
			if cur < 0 {
				continue
			}
			switch tok {
			case "login":
				n[cur].Login = v
			case "password":
				n[cur].Password = v
			default:
				n[cur].Account = v
			}
		case "macdef":
			s.next() // the macro's name
			s.skipMacro()
		default:
			if strings.HasPrefix(tok, "#") {
				s.skipLine()
			}
		}
	}
}

// lookup returns the first machine entry for host (case-insensitive). The
// default entry is never returned: it would send the password to whatever
// host a URL names.
func (n netrc) lookup(host string) (netrcEntry, bool) {
	for _, e := range n {
		if !e.Default && strings.EqualFold(e.Machine, host) {
			return e, true
		}
	}
	return netrcEntry{}, false
}

type netrcScanner struct {
	s string
	i int
}

func isNetrcSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// next returns the next token, whether it was quoted, and false at the end.
func (sc *netrcScanner) next() (tok string, quoted, ok bool) {
	for sc.i < len(sc.s) && isNetrcSpace(sc.s[sc.i]) {
		sc.i++
	}
	if sc.i >= len(sc.s) {
		return "", false, false
	}
	if sc.s[sc.i] != '"' {
		start := sc.i
		for sc.i < len(sc.s) && !isNetrcSpace(sc.s[sc.i]) {
			sc.i++
		}
		return sc.s[start:sc.i], false, true
	}
	// Quoted: up to the closing quote, or the end of the line if there is
	// none (curl refuses the file then; one bad line is not worth that).
	sc.i++
	var b strings.Builder
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch {
		case c == '"':
			sc.i++
			return b.String(), true, true
		case c == '\n':
			return b.String(), true, true
		case c == '\\' && sc.i+1 < len(sc.s):
			sc.i++
			switch e := sc.s[sc.i]; e {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
		sc.i++
	}
	return b.String(), true, true
}

// skipLine moves past the end of the current line.
func (sc *netrcScanner) skipLine() {
	if j := strings.IndexByte(sc.s[sc.i:], '\n'); j >= 0 {
		sc.i += j + 1
	} else {
		sc.i = len(sc.s)
	}
}

// skipMacro skips the rest of the macdef line and the macro body: every
// line up to and including the next empty (or blank) line.
func (sc *netrcScanner) skipMacro() {
	sc.skipLine()
	for sc.i < len(sc.s) {
		start := sc.i
		sc.skipLine()
		if strings.TrimSpace(sc.s[start:sc.i]) == "" {
			return
		}
	}
}

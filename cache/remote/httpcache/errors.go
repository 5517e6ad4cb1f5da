package httpcache

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
)

// ErrUnavailable means the server could not be reached (connection
// refused, DNS failure, timeouts) even after retries, so the client stopped
// trying for the rest of the process. Callers carry on with the local
// cache; the user was warned once through [Options.Warn]. It is
// [remote.ErrUnavailable], so the tiered cache can tell without importing
// this package.
var ErrUnavailable = remote.ErrUnavailable

// ErrReadOnly is returned by PutBlob and PutEntry of a client created with
// [Options.ReadOnly]; nothing was sent.
var ErrReadOnly = errors.New("remote cache is read-only")

// statusError is an answer the client does not accept: a status other
// than 2xx and 404, an encoding it did not ask for, a redirect it did not
// follow. Msg is already sanitized.
type statusError struct {
	Code int
	Msg  string
}

func (e *statusError) Error() string {
	s := fmt.Sprintf("server answered %d %s", e.Code, http.StatusText(e.Code))
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// unavailableError is returned by the request that found the server
// unreachable and by every later call.
type unavailableError struct{ cause error }

func (e *unavailableError) Error() string {
	return fmt.Sprintf("%v (%v); continuing with the local cache only", ErrUnavailable, e.cause)
}
func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.cause} }

// scrubbedError replaces an error whose text contained a credential. It
// keeps the sentinels callers branch on, but not the original chain, which
// could be printed by unwrapping it.
type scrubbedError struct {
	msg       string
	sentinels []error
}

func (e *scrubbedError) Error() string   { return e.msg }
func (e *scrubbedError) Unwrap() []error { return e.sentinels }

// scrub returns err, or a copy with every credential replaced if its text
// holds one. Every error a Client returns passes through it.
func (c *Client) scrub(err error) error {
	if err == nil || !c.auth.leaks(err.Error()) {
		return err
	}
	se := &scrubbedError{msg: c.auth.redact(err.Error())}
	for _, s := range []error{cache.ErrNotFound, ErrUnavailable, ErrReadOnly} {
		if errors.Is(err, s) {
			se.sentinels = append(se.sentinels, s)
		}
	}
	return se
}

// sanitize makes server-chosen text fit for a one-line message: at most
// 120 characters, printable, without credentials.
func (c *Client) sanitize(s string) string {
	const limit = 120
	s = strings.ToValidUTF8(c.auth.redact(s), "?")
	if line, _, ok := strings.Cut(strings.TrimSpace(s), "\n"); ok {
		s = line
	}
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

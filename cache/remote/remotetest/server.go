// Package remotetest is a fault-injecting Bazel HTTP cache server for tests
// (H6 in RELIABILITY.md): an in-memory ac/ and cas/ store on loopback that
// records every request and can break its GET answers in each of the ways
// test T17 lists, one [Mode] per request.
//
// It lives outside package remote's tests so the engine's tests (secret
// canaries, end-to-end remote runs) can use the same server.
package remotetest

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Mode is how the server answers one GET.
type Mode int

// The modes of T17. A mode that needs the object (all but the status and
// redirect modes) answers 404 if the object is missing.
const (
	OK                   Mode = iota // the object, correctly
	CutWithLength                    // 1: right Content-Length, connection closed halfway
	CutCleanEOF                      // 2: no Content-Length, HTTP/1.0-style close halfway: looks like a clean EOF
	CutChunked                       // 2b: chunked, connection closed halfway without the last chunk
	WrongBytes                       // 3: right length, one byte changed
	TrailingBytes                    // 4: no Content-Length, the object then junk, then close
	TrailingInLength                 // 4b: Content-Length counts the object plus junk
	TrailingBeyondLength             // 4c: right Content-Length, junk written after it on the wire
	Status503                        // 5: 503 Service Unavailable
	Status500                        // 5: 500 Internal Server Error
	Stall                            // 6: right Content-Length, half the body, then nothing until the client leaves
	HTMLPage                         // 7: 200 with an HTML error page
	TruncatedGzip                    // 8: Content-Encoding gzip, the gzip stream cut in half
	RedirectOther                    // 9: 307 to the same path on the Other server
	RedirectSame                     // 9b: 307 to /moved/... on this server, which serves the object
	OtherBlob                        // 10: the content of a different, valid blob (OtherBlobContent)
)

var modeNames = [...]string{"ok", "cut-with-length", "cut-clean-eof", "cut-chunked", "wrong-bytes",
	"trailing-bytes", "trailing-in-length", "trailing-beyond-length", "503", "500", "stall",
	"html-page", "truncated-gzip", "redirect-other-host", "redirect-same-host", "other-blob"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// OtherBlobContent is what OtherBlob serves: a valid blob, but another one.
var OtherBlobContent = []byte("a different, perfectly valid blob\n")

// Options configures a [Server].
type Options struct {
	// Prefix is the path under which ac/ and cas/ live, like "/team/".
	// Default "/".
	Prefix string
	// VerifyCAS makes the server answer 500 to a CAS PUT whose body does
	// not hash to its name, and not store it, as bazel-remote does. Without
	// it the server stores anything, as nginx does.
	VerifyCAS bool
	// PutStatus is the status of an accepted PUT. Default: 201 for a new
	// object and 204 for an existing one, as nginx answers; bazel-remote
	// answers 200.
	PutStatus int
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string // below the prefix: "cas/<hex>"
	Header http.Header
	Body   []byte
	Status int  // status sent (200 for hijacked answers)
	Mode   Mode // mode applied (GETs)
}

// Server is the fault-injecting cache server. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the base URL to give a client: http://127.0.0.1:PORT/prefix/.
	URL string
	// OtherURL is the base URL of a second server on another port, the
	// target of RedirectOther. It records requests and serves the same
	// objects.
	OtherURL string

	opts    Options
	srv     *httptest.Server
	other   *httptest.Server
	closing chan struct{}

	mu        sync.Mutex
	objects   map[string][]byte
	getQueue  []Mode
	getMode   Mode
	putQueue  []int
	reqs      []Request
	otherReqs []Request
}

// New starts a server and its Other server on loopback; both are closed
// when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = "/"
	}
	if !strings.HasSuffix(opts.Prefix, "/") {
		opts.Prefix += "/"
	}
	s := &Server{opts: opts, objects: map[string][]byte{}, closing: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.other = httptest.NewServer(http.HandlerFunc(s.serveOther))
	s.URL = s.srv.URL + opts.Prefix
	s.OtherURL = s.other.URL + opts.Prefix
	t.Cleanup(func() {
		close(s.closing) // releases stalled handlers, so Close can return
		s.srv.CloseClientConnections()
		s.srv.Close()
		s.other.Close()
	})
	return s
}

// Queue sets the modes of the next GETs, in order; later GETs get the
// default mode (OK unless SetMode changed it).
func (s *Server) Queue(modes ...Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.getQueue = append(s.getQueue, modes...)
}

// SetMode sets the mode of every GET that the queue does not cover.
func (s *Server) SetMode(m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.getMode = m
}

// QueuePut makes the next PUTs answer these statuses without storing.
func (s *Server) QueuePut(codes ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putQueue = append(s.putQueue, codes...)
}

// Set stores an object under path ("cas/<hex>" or "ac/<hex>").
func (s *Server) Set(path string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[path] = bytes.Clone(b)
}

// Object returns the object stored under path.
func (s *Server) Object(path string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objects[path]
	return bytes.Clone(b), ok
}

// Objects returns the paths of all stored objects.
func (s *Server) Objects() map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string][]byte, len(s.objects))
	for k, v := range s.objects {
		m[k] = bytes.Clone(v)
	}
	return m
}

// Requests returns what the server received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// OtherRequests returns what the Other server received.
func (s *Server) OtherRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.otherReqs...)
}

// Count returns how many requests with method the server received.
func (s *Server) Count(method string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == method {
			n++
		}
	}
	return n
}

var objectPath = regexp.MustCompile(`^(ac|cas)/[0-9a-f]{64}$`)

func (s *Server) serveOther(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, s.opts.Prefix)
	s.mu.Lock()
	s.otherReqs = append(s.otherReqs, Request{Method: r.Method, Path: path, Header: r.Header.Clone(), Body: body, Status: http.StatusOK})
	b, ok := s.objects[path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Write(b)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	path, moved := strings.CutPrefix(strings.TrimPrefix(r.URL.Path, s.opts.Prefix), "moved/")
	s.mu.Lock()
	i := len(s.reqs)
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: path, Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()
	var (
		status int
		mode   Mode
	)
	if err != nil {
		// The client gave up mid-body: like nginx, store nothing.
		status = http.StatusBadRequest
		http.Error(w, "incomplete body", status)
	} else {
		status, mode = s.answer(w, r, path, moved, body)
	}
	s.mu.Lock()
	s.reqs[i].Status, s.reqs[i].Mode = status, mode
	s.mu.Unlock()
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, path string, moved bool, body []byte) (int, Mode) {
	if !strings.HasPrefix(r.URL.Path, s.opts.Prefix) || !objectPath.MatchString(path) {
		http.NotFound(w, r)
		return http.StatusNotFound, OK
	}
	switch r.Method {
	case http.MethodGet:
		mode := OK
		if !moved {
			mode = s.nextMode()
		}
		return s.get(w, r, path, mode), mode
	case http.MethodHead:
		s.mu.Lock()
		b, ok := s.objects[path]
		s.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return http.StatusNotFound, OK
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.WriteHeader(http.StatusOK)
		return http.StatusOK, OK
	case http.MethodPut:
		return s.put(w, path, body), OK
	}
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return http.StatusMethodNotAllowed, OK
}

func (s *Server) nextMode() Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.getQueue) > 0 {
		m := s.getQueue[0]
		s.getQueue = s.getQueue[1:]
		return m
	}
	return s.getMode
}

func (s *Server) put(w http.ResponseWriter, path string, body []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.putQueue) > 0 {
		code := s.putQueue[0]
		s.putQueue = s.putQueue[1:]
		http.Error(w, http.StatusText(code), code)
		return code
	}
	if s.opts.VerifyCAS && strings.HasPrefix(path, "cas/") {
		sum := sha256.Sum256(body)
		if got := hex.EncodeToString(sum[:]); got != path[len("cas/"):] {
			// bazel-remote's answer, status and wording.
			msg := fmt.Sprintf("Failed to write compressed CAS blob to disk: checksums don't match. Expected %s, found %s", path[len("cas/"):], got)
			http.Error(w, msg, http.StatusInternalServerError)
			return http.StatusInternalServerError
		}
	}
	_, existed := s.objects[path]
	s.objects[path] = body // replaced whole: a reader never sees a torn object
	code := s.opts.PutStatus
	switch {
	case code != 0:
	case existed:
		code = http.StatusNoContent
	default:
		code = http.StatusCreated
	}
	w.WriteHeader(code)
	return code
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, path string, mode Mode) int {
	switch mode {
	case Status503:
		http.Error(w, "upstream busy", http.StatusServiceUnavailable)
		return http.StatusServiceUnavailable
	case Status500:
		http.Error(w, "internal error", http.StatusInternalServerError)
		return http.StatusInternalServerError
	case RedirectOther:
		http.Redirect(w, r, s.OtherURL+path, http.StatusTemporaryRedirect)
		return http.StatusTemporaryRedirect
	case RedirectSame:
		http.Redirect(w, r, s.URL+"moved/"+path, http.StatusTemporaryRedirect)
		return http.StatusTemporaryRedirect
	}
	s.mu.Lock()
	b, ok := s.objects[path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return http.StatusNotFound
	}
	half := b[:len(b)/2]
	junk := []byte("<!-- trailing junk -->")
	switch mode {
	case CutWithLength:
		raw(w, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", len(b)), half)
	case CutCleanEOF:
		raw(w, "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n", half)
	case CutChunked:
		raw(w, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
			fmt.Appendf(nil, "%x\r\n%s\r\n", len(half), half))
	case TrailingBytes:
		raw(w, "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n", append(bytes.Clone(b), junk...))
	case TrailingInLength:
		w.Header().Set("Content-Length", fmt.Sprint(len(b)+len(junk)))
		w.Write(append(bytes.Clone(b), junk...))
	case TrailingBeyondLength:
		// Connection: close keeps Go's client from logging the junk as an
		// unsolicited response on an idle connection.
		raw(w, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(b)), append(bytes.Clone(b), junk...))
	case WrongBytes:
		bad := bytes.Clone(b)
		if len(bad) > 0 {
			bad[len(bad)/2] ^= 0x01
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(bad)))
		w.Write(bad)
	case Stall:
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(half)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done(): // the client gave up
		case <-s.closing:
		}
	case HTMLPage:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><p>Please log in.</p></body></html>\n")
	case TruncatedGzip:
		// A gzip stream of the object's start is enough to cut in half,
		// and cheap under the race detector.
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
		zw.Write(b[:min(len(b), 16<<10)])
		zw.Close()
		cut := gz.Bytes()[:gz.Len()/2]
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", fmt.Sprint(len(cut)))
		w.Write(cut)
	case OtherBlob:
		w.Header().Set("Content-Length", fmt.Sprint(len(OtherBlobContent)))
		w.Write(OtherBlobContent)
	default:
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.Write(b)
	}
	return http.StatusOK
}

// raw takes over the connection, writes head and body as they are, and
// closes it.
func raw(w http.ResponseWriter, head string, body []byte) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err) // httptest's HTTP/1 server always supports it
	}
	defer conn.Close()
	buf.WriteString(head)
	buf.Write(body)
	buf.Flush()
}

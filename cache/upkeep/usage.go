package upkeep

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-run/cairn/cache"
)

// Usage sessions record which entries each process used, so GC can evict
// the least recently used entries and spare those a run in progress is
// using, and stats can report hit rates. They are advisory: no read or write
// of an object depends on them (I7), a lost or garbled line costs at most
// an early eviction, and a process without a session (a nil *Session)
// works the same.
//
// A session is one append-only file sessions/<start unix ns>-<pid>-<16 hex>:
//
//	cairn-session 1
//	label <free text>
//	hit <key>
//	miss <key>
//	put <key>
//	end
//
// Its modification time is when it was last written or heartbeat: a
// session without an end line whose file changed within [SessionTTL] is
// live; one older than that is dead (its process crashed or hangs). The
// lines of a session count as used at the file's modification time.

const (
	sessionsDir  = "sessions"
	sessionMagic = "cairn-session 1"

	// SessionTTL is how long a session without an end line stays live
	// after its file last changed. Sessions refresh their file every
	// [SessionHeartbeat], so only a crashed or hung process lets it lapse.
	SessionTTL = 10 * time.Minute
	// SessionHeartbeat is how often a session refreshes its file's
	// modification time while its process runs.
	SessionHeartbeat = time.Minute
	// SessionKeep is how long GC keeps ended and dead session files, for
	// hit-rate statistics.
	SessionKeep = 7 * 24 * time.Hour

	maxSessionLine  = 256     // longer lines are skipped
	maxSessionLabel = 200     // bytes of label kept
	maxSessionKeys  = 1 << 20 // distinct keys remembered per session
)

// Session records one process's use of the cache (a cairn run) in a file
// under sessions/. Its methods are safe for concurrent use, and are no-ops
// on a nil *Session. Recording never fails the caller: the first write
// error is kept and returned by Close.
type Session struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	path   string
	err    error
	closed bool
	// lingering: lines wait in w, and a flush is due within sessionLinger.
	lingering bool
	stop      chan struct{}
	done      chan struct{}
}

// StartSession creates a session file labelled label (say "run
// experiment.hcl"; newlines are replaced) and starts its heartbeat. Call
// Close when the process is done with the cache. An error means no session
// could be recorded; the caller may carry on with a nil *Session.
func StartSession(c *cache.Dir, label string) (*Session, error) {
	return startSession(c, label, SessionHeartbeat)
}

func startSession(c *cache.Dir, label string, beat time.Duration) (*Session, error) {
	dir := filepath.Join(c.Root(), sessionsDir)
	if _, err := c.Mkdir(dir); err != nil {
		return nil, fmt.Errorf("cache start session in %s: %w", c.Root(), err)
	}
	var (
		f    *os.File
		path string
		err  error
	)
	for try := 0; ; try++ {
		name := fmt.Sprintf("%d-%d-%016x", time.Now().UnixNano(), os.Getpid(), rand.Uint64())
		path = filepath.Join(dir, name)
		f, err = createAppend(c, path)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || try >= 10 {
			return nil, fmt.Errorf("cache start session: %w", err)
		}
	}
	s := &Session{f: f, w: bufio.NewWriterSize(f, 4096), path: path, stop: make(chan struct{}), done: make(chan struct{})}
	s.w.WriteString(sessionMagic + "\nlabel " + cleanLabel(label) + "\n")
	if err := s.w.Flush(); err != nil {
		f.Close()
		removeFile(path)
		return nil, fmt.Errorf("cache start session %s: %w", path, err)
	}
	go s.heartbeat(beat)
	return s, nil
}

// cleanLabel keeps a label on one line of bounded length.
func cleanLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxSessionLabel {
		s = s[:maxSessionLabel]
	}
	return s
}

// Path returns the session's file ("" for a nil session).
func (s *Session) Path() string {
	if s == nil {
		return ""
	}
	return s.path
}

// Hit records that the entry for key was found and used. The line may
// wait in memory for up to [sessionLinger] (a no-op run hits every phase's
// entry, and a write each cost it more than its decisions): call Flush
// before reading the entry's blobs, so a GC sees the hit before the
// restore needs them.
func (s *Session) Hit(key cache.ActionID) { s.record("hit", key, false) }

// Miss records that no usable entry for key was found (it may wait, as a
// hit).
func (s *Session) Miss(key cache.ActionID) { s.record("miss", key, false) }

// Put records that an entry for key was stored.
func (s *Session) Put(key cache.ActionID) { s.record("put", key, true) }

// sessionLinger is the longest a recorded hit or miss waits in memory
// before it is written to the session file.
const sessionLinger = 50 * time.Millisecond

func (s *Session) record(verb string, key cache.ActionID, now bool) {
	if s == nil {
		return
	}
	var line [4 + 1 + 64 + 1]byte
	b := append(line[:0], verb...)
	b = append(b, ' ')
	b = append(b, key.String()...)
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.w.Write(b)
	switch {
	case now:
		s.flushLocked()
	case s.w.Buffered() > 0 && !s.lingering:
		s.lingering = true
		time.AfterFunc(sessionLinger, s.Flush)
	}
}

// Flush writes the lines recorded so far to the session file.
func (s *Session) Flush() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.flushLocked()
	}
}

func (s *Session) flushLocked() {
	s.lingering = false
	if err := s.w.Flush(); err != nil && s.err == nil {
		s.err = err
	}
}

// Close appends the end line, stops the heartbeat and closes the file. It
// returns the first error met writing the session, if any. Closing twice,
// or a nil session, is a no-op.
func (s *Session) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.w.WriteString("end\n")
	s.flushLocked()
	close(s.stop)
	s.mu.Unlock()
	<-s.done
	err := s.err
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cache session %s: %w", s.path, err)
	}
	return nil
}

// heartbeat refreshes the file's modification time every beat, so GC sees
// the session live even when it records nothing for a while.
func (s *Session) heartbeat(beat time.Duration) {
	defer close(s.done)
	t := time.NewTicker(beat)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.mu.Lock()
			if !s.closed {
				os.Chtimes(s.path, time.Time{}, now)
			}
			s.mu.Unlock()
		}
	}
}

// SessionState says whether a session's process is still using the cache.
type SessionState string

const (
	SessionLive  SessionState = "live"  // no end line, file changed within SessionTTL
	SessionEnded SessionState = "ended" // closed normally
	SessionDead  SessionState = "dead"  // no end line, file older than SessionTTL: crashed or hung
)

// SessionStats describes one session file.
type SessionStats struct {
	Name       string
	Start      time.Time // from the file name
	PID        int
	Label      string
	LastActive time.Time // the file's modification time: last line or heartbeat
	State      SessionState
	Hits       int
	Misses     int
	Puts       int
}

// sessionLog is what a session file says.
type sessionLog struct {
	label              string
	ended              bool
	hits, misses, puts int
	used               map[cache.ActionID]struct{} // keys hit or put; nil unless asked for
	bad                int                         // lines not understood
	foreign            bool                        // not a cairn-session 1 file
}

// parseSessionLog reads a session file. Lines it does not understand,
// overlong lines and a final line without its newline (being written) are
// skipped; it never fails on content. With keys it also collects the keys
// hit or put, at most maxSessionKeys of them.
func parseSessionLog(r io.Reader, keys bool) (sessionLog, error) {
	var l sessionLog
	if keys {
		l.used = make(map[cache.ActionID]struct{})
	}
	br := bufio.NewReaderSize(r, maxSessionLine)
	first := true
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if first {
				l.foreign = true
				return l, nil
			}
			l.bad++
			for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of the line
				_, err = br.ReadSlice('\n')
			}
			if err == io.EOF {
				return l, nil
			}
			if err != nil {
				return l, err
			}
			continue
		}
		if err == io.EOF {
			if len(line) > 0 {
				l.bad++ // partial last line
			}
			return l, nil
		}
		if err != nil {
			return l, err
		}
		line = line[:len(line)-1]
		if first {
			first = false
			if string(line) != sessionMagic {
				l.foreign = true
				return l, nil
			}
			continue
		}
		l.parseLine(line)
	}
}

func (l *sessionLog) parseLine(line []byte) {
	verb, arg, _ := bytes.Cut(line, []byte(" "))
	switch string(verb) {
	case "label":
		l.label = string(arg)
		return
	case "end":
		if len(arg) == 0 {
			l.ended = true
			return
		}
	case "hit", "miss", "put":
		key, err := cache.ParseActionID(string(arg))
		if err != nil {
			break
		}
		switch verb[0] {
		case 'h':
			l.hits++
		case 'm':
			l.misses++
			return
		case 'p':
			l.puts++
		}
		if l.used != nil && len(l.used) < maxSessionKeys {
			l.used[key] = struct{}{}
		}
		return
	}
	l.bad++
}

// parseSessionName splits <start unix ns>-<pid>-<16 hex>.
func parseSessionName(name string) (start time.Time, pid int, ok bool) {
	parts := strings.Split(name, "-")
	if len(parts) != 3 || len(parts[2]) != 16 {
		return time.Time{}, 0, false
	}
	ns, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || ns < 0 {
		return time.Time{}, 0, false
	}
	pid, err = strconv.Atoi(parts[1])
	if err != nil || pid < 0 {
		return time.Time{}, 0, false
	}
	if _, err := strconv.ParseUint(parts[2], 16, 64); err != nil {
		return time.Time{}, 0, false
	}
	return time.Unix(0, ns), pid, true
}

// sessionFile is one file in sessions/ as found by readSessions.
type sessionFile struct {
	SessionStats
	path  string
	info  fs.FileInfo
	used  map[cache.ActionID]struct{}
	valid bool // a well-named cairn-session 1 file
}

// readSessions reads every session file, newest start first. Files that
// vanish meanwhile are skipped; other errors reading one file are
// returned joined, after the rest have been read. keys says whether to
// collect each session's used keys.
func readSessions(c *cache.Dir, now time.Time, keys bool) ([]sessionFile, error) {
	dir := filepath.Join(c.Root(), sessionsDir)
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []sessionFile
	var errs []error
	for _, de := range des {
		if isNFSTemp(de.Name()) {
			continue
		}
		sf, err := readSession(filepath.Join(dir, de.Name()), now, keys)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
		}
		if sf.info != nil {
			out = append(out, sf)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.After(out[j].Start)
		}
		return out[i].Name < out[j].Name
	})
	return out, errors.Join(errs...)
}

// readSession reads one session file. It returns the file's info even when
// reading its content fails.
func readSession(path string, now time.Time, keys bool) (sessionFile, error) {
	sf := sessionFile{path: path}
	sf.Name = filepath.Base(path)
	st, err := os.Lstat(path)
	if err != nil {
		return sf, err
	}
	sf.info = st
	sf.LastActive = st.ModTime()
	start, pid, nameOK := parseSessionName(sf.Name)
	sf.Start, sf.PID = start, pid
	sf.State = SessionDead
	if !st.Mode().IsRegular() || !nameOK {
		return sf, nil
	}
	f, err := cache.OpenObject(path)
	if err != nil {
		return sf, err
	}
	defer f.Close()
	l, err := parseSessionLog(f, keys)
	if err != nil {
		return sf, fmt.Errorf("read session %s: %w", path, err)
	}
	if l.foreign {
		return sf, nil
	}
	sf.valid = true
	sf.Label, sf.Hits, sf.Misses, sf.Puts, sf.used = l.label, l.hits, l.misses, l.puts, l.used
	switch {
	case l.ended:
		sf.State = SessionEnded
	case now.Sub(sf.LastActive) <= SessionTTL:
		sf.State = SessionLive
	}
	return sf, nil
}

// isNFSTemp reports an NFS "silly rename" file (.nfsXXXX): a file deleted
// while open on some client. The NFS client removes it when closed; nobody
// else may.
func isNFSTemp(name string) bool { return strings.HasPrefix(name, ".nfs") }

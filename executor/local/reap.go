package local

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/internal/fsx"
	"golang.org/x/sys/unix"
)

// KillMarked sends SIGKILL to every process whose environment holds the
// entry (such as CAIRN_RUN_ID=<run>), and waits briefly for them to go.
// Phases always get CAIRN_RUN_ID and CAIRN_JOB, and descendants inherit
// them even when they leave the phase's process group.
func KillMarked(entry string) { killMarkedAll([]string{entry}, 0) }

// killMarkedAll is KillMarked for several entries in one pass over /proc.
// With minPID > 0 (the lowest pid of the jobs whose descendants are
// sought) it skips the environment of every process numbered below it,
// which cannot descend from those jobs unless pids wrapped around since.
func killMarkedAll(entries []string, minPID int) {
	if minPID > 0 && lastPID() < minPID {
		minPID = 0 // pids wrapped around: look at every process
	}
	markers := make([][]byte, len(entries))
	for i, e := range entries {
		markers[i] = []byte(e + "\x00")
	}
	owned := jobEnvMarkers()
	marked := func(env []byte) bool {
		env = append(env, 0)
		for _, m := range markers {
			if bytes.Contains(env, m) {
				return true
			}
		}
		return false
	}
	self := os.Getpid()
	var pids []int
	procs, err := listProcs(minPID)
	if err != nil {
		return
	}
	var env []byte // one buffer for the whole scan
	for _, name := range procs {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self || pid < minPID {
			continue
		}
		env, err = readProcFile(filepath.Join("/proc", name, "environ"), env)
		if err != nil || !marked(env) || otherExecutors(env, owned) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			pids = append(pids, pid)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			if syscall.Kill(pid, 0) != nil {
				break
			}
			// A killed process lingers as a zombie until its parent (init,
			// for orphans) reaps it; /proc shows its state.
			if st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// jobEnvMarkers returns the environment entries that mark the processes of
// the jobs of another executor (SLURM_JOB_ID=), as the registry has them.
func jobEnvMarkers() [][]byte {
	var out [][]byte
	for _, p := range executor.Plugins() {
		if p.JobEnv != "" {
			out = append(out, []byte(p.JobEnv+"="))
		}
	}
	return out
}

// otherExecutors reports whether a process environment is that of a job
// of another executor. Such a process is followed and cancelled by its
// executor, never killed here, even when its node is this machine: a
// resumed run adopts the job.
func otherExecutors(env []byte, markers [][]byte) bool {
	for _, m := range markers {
		if bytes.HasPrefix(env, m) || bytes.Contains(env, append([]byte{0}, m...)) {
			return true
		}
	}
	return false
}

// markReaper kills, in the background, the processes carrying the markers
// of jobs that ended: markers queued while a scan runs are served by the
// next one, which starts at least reapPace after it: when jobs end one
// after another (a cold run of short phases), one scan serves several.
type markReaper struct {
	mu      sync.Mutex
	pending []string
	minPID  int // lowest pid among the pending jobs
	running bool
	idle    chan struct{} // closed when the current batch of scans ends
	last    time.Time     // when the last scan started
}

func (m *markReaper) add(entry string, pid int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 || pid < m.minPID {
		m.minPID = pid
	}
	m.pending = append(m.pending, entry)
	if !m.running {
		m.running = true
		m.idle = make(chan struct{})
		go m.loop(m.idle)
	}
}

// reapPace is the least time from the start of one scan of /proc to the
// start of the next. A scan reads the environment of every process
// started since the jobs it serves; back to back they were a twentieth of
// cairn's own work in a cold run of 1,000 short phases, while an escaped
// descendant lives at most this much longer.
const reapPace = 5 * time.Millisecond

func (m *markReaper) loop(idle chan struct{}) {
	m.mu.Lock()
	for len(m.pending) > 0 {
		if wait := reapPace - time.Since(m.last); wait > 0 {
			// More jobs may end meanwhile: one scan serves them all.
			m.mu.Unlock()
			time.Sleep(wait)
			m.mu.Lock()
		}
		batch, minPID := m.pending, m.minPID
		m.pending = nil
		m.last = time.Now()
		m.mu.Unlock()
		killMarkedAll(batch, minPID)
		m.mu.Lock()
	}
	m.running = false
	m.mu.Unlock()
	close(idle)
}

// flush waits for the queued markers to be served.
func (m *markReaper) flush() {
	m.mu.Lock()
	idle := m.idle
	running := m.running
	m.mu.Unlock()
	if running {
		<-idle
	}
}

// lastPID is the pid most recently given to a process (0 if unknown).
// The file stays open: each scan reads it again with one pread.
func lastPID() int {
	fd := nsLastPID()
	if fd < 0 {
		return 0
	}
	var b [32]byte
	n, err := unix.Pread(fd, b[:], 0)
	if err != nil || n <= 0 {
		return 0
	}
	v, _ := strconv.Atoi(string(bytes.TrimSpace(b[:n])))
	return v
}

var nsLastPID = sync.OnceValue(func() int {
	fd, err := unix.Open("/proc/sys/kernel/ns_last_pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
})

// procTGIDOffset is where the processes begin among the entries of /proc
// as the kernel numbers them for seeking: process pid is at offset
// procTGIDOffset+pid (FIRST_PROCESS_ENTRY+2 in fs/proc/base.c, unchanged
// since Linux 2.6). Listing all of /proc instantiates an entry for every
// process on the machine; a scan that seeks to the jobs' pids lists only
// the processes started since.
const procTGIDOffset = 256 + 2

// listProcs lists the names in /proc, from the pid minPID on when it is
// positive (with some slack, and possibly more names: callers filter).
func listProcs(minPID int) ([]string, error) {
	d, err := fsx.OpenFile("/proc", os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if minPID > 0 {
		// The slack covers a kernel that numbers its entries a little
		// differently; one that does not support seeking is listed
		// whole.
		off := int64(procTGIDOffset + minPID - 256)
		if off < 0 {
			off = 0
		}
		if _, err := d.Seek(off, io.SeekStart); err != nil {
			if d, err = fsx.OpenFile("/proc", os.O_RDONLY|unix.O_DIRECTORY, 0); err != nil {
				return nil, err
			}
			defer d.Close()
		}
	}
	return d.Readdirnames(-1)
}

// readProcFile reads a file of /proc. A reaper scan reads the environment
// of every process started since the job: fsx.OpenFile spares each the
// system calls os.ReadFile spends on Go's poller.
//
// It reads into buf (from its start; a new buffer if it is too small) and
// returns what it read, so a scan reuses one buffer.
func readProcFile(path string, buf []byte) ([]byte, error) {
	f, err := fsx.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	b := buf[:0]
	if cap(b) < 4096 {
		b = make([]byte, 0, 4096)
	}
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

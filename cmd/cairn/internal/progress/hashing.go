package progress

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/cairn-run/cairn/internal/fsx"
	"github.com/cairn-run/cairn/internal/hashmeter"
)

// hashShowAfter is how long a phase's hashing lasts before the live
// display shows it: shorter hashing would only flicker.
const hashShowAfter = 500 * time.Millisecond

// hashing is a phase's hashing as the live display shows it.
type hashing struct {
	phase string
	p     hashmeter.Progress
}

var (
	_ hashmeter.Sink = (*termView)(nil)
	_ hashmeter.Sink = (*jsonView)(nil)
)

// HashProgress shows a phase's hashing in the live region once it has
// lasted hashShowAfter, and takes it away when it ends.
func (v *termView) HashProgress(phase string, p hashmeter.Progress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	at := -1
	for i, h := range v.hashing {
		if h.phase == phase {
			at = i
		}
	}
	switch {
	case p.Final && at < 0, !p.Final && at < 0 && p.Elapsed < hashShowAfter:
		return
	case p.Final:
		v.hashing = append(v.hashing[:at], v.hashing[at+1:]...)
	case at < 0:
		v.hashing = append(v.hashing, hashing{phase, p})
	default:
		v.hashing[at].p = p
	}
	v.update()
}

// hashLine is the live line of a phase's hashing:
//
//	hashing inputs of scan: 48,213 of 200,000 files, 47.0 MiB of 195.0 MiB, 31.0 MiB/s, about 5s left
//
// The rate and the time left appear once they are known; while inputs
// are hashed as they are found, the totals are what was found so far
// ("of at least 200,000 files") and no time left is told.
func hashLine(phase string, p hashmeter.Progress) string {
	of := "of"
	if p.Growing {
		of = "of at least"
	}
	line := fmt.Sprintf("hashing inputs of %s: %s %s %s files, %s", phase, grouped(p.FilesDone), of, grouped(p.FilesTotal), fsx.FormatBytes(p.BytesDone))
	// Files hashed as they are found are sized as they are read: then
	// "of at least" the bytes done would say nothing.
	if !p.Growing || p.BytesTotal > p.BytesDone {
		line += " " + of + " " + fsx.FormatBytes(p.BytesTotal)
	}
	if r := p.Rate(); r > 0 {
		line += ", " + fsx.FormatBytes(int64(r)) + "/s"
	}
	if left, ok := p.ETA(); ok {
		line += ", about " + fmtLeft(left) + " left"
	}
	return line
}

// grouped writes n with commas between groups of three digits.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		out = append(out, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// fmtLeft is a time left, in whole seconds rounded up and at least one
// ("5s", "2m5s"): the line is gone once hashing is done, so "0s left"
// would only mislead.
func fmtLeft(d time.Duration) string {
	return (time.Duration(max(math.Ceil(d.Seconds()), 1)) * time.Second).String()
}

// HashProgress writes a hash_progress event.
func (v *jsonView) HashProgress(phase string, p hashmeter.Progress) {
	je := struct {
		Time       time.Time `json:"time"`
		Event      string    `json:"event"`
		Phase      string    `json:"phase"`
		FilesDone  int64     `json:"files_done"`
		FilesTotal int64     `json:"files_total"`
		BytesDone  int64     `json:"bytes_done"`
		BytesTotal int64     `json:"bytes_total"`
		Rate       int64     `json:"rate_bytes_per_s"`
		// ETA is absent until something is done, and while the
		// totals grow.
		ETA     *float64 `json:"eta_s,omitempty"`
		Growing bool     `json:"growing,omitempty"`
		Final   bool     `json:"final,omitempty"`
	}{time.Now().UTC(), "hash_progress", phase, p.FilesDone, p.FilesTotal, p.BytesDone, p.BytesTotal, int64(p.Rate()), nil, p.Growing, p.Final}
	if left, ok := p.ETA(); ok {
		s := math.Round(left.Seconds()*10) / 10
		je.ETA = &s
	}
	v.mu.Lock()
	_ = v.enc.Encode(je)
	v.mu.Unlock()
}

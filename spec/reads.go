package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// Reads records what a load read from outside the spec: the files read by
// file() and the environment variables looked up (CAIRN_VAR_NAME, env(),
// HOME). A memo of the spec (package spec/memo) is good only while each
// of them is unchanged. Set it in Options.Reads, read it once the load
// has returned.
type Reads struct {
	mu    sync.Mutex
	files map[string]string // absolute path -> hex SHA-256 of its content
	env   map[string]EnvRead
}

// EnvRead is one environment lookup: its value, or unset.
type EnvRead struct {
	Set   bool
	Value string
}

// NewReads returns an empty record.
func NewReads() *Reads {
	return &Reads{files: map[string]string{}, env: map[string]EnvRead{}}
}

// Files returns the files read, by absolute path, each with the hex
// SHA-256 of the content read.
func (r *Reads) Files() map[string]string { return r.files }

// Env returns the environment variables looked up, by name.
func (r *Reads) Env() map[string]EnvRead { return r.env }

func (r *Reads) file(path string, content []byte) {
	if r == nil {
		return
	}
	sum := sha256.Sum256(content)
	r.mu.Lock()
	r.files[path] = hex.EncodeToString(sum[:])
	r.mu.Unlock()
}

// lookupEnv wraps look so that every lookup is recorded.
func (r *Reads) lookupEnv(look func(string) (string, bool)) func(string) (string, bool) {
	return func(name string) (string, bool) {
		var v string
		var ok bool
		if look != nil {
			v, ok = look(name)
		}
		r.mu.Lock()
		r.env[name] = EnvRead{Set: ok, Value: v}
		r.mu.Unlock()
		return v, ok
	}
}

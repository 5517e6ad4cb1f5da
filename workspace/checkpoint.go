package workspace

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/cairn-run/cairn/internal/fsx"
)

// Checkpoints makes and removes the phases' $CAIRN_CHECKPOINT_DIR
// directories (.cairn/checkpoints/<key>). Every phase that runs gets one
// and nearly every one leaves it empty, so a run would make and remove a
// directory per phase; where making an inode is dear (ext4 without a
// journal) that is a good part of cairn's own work. Instead the empty
// directory of a phase that succeeded is renamed to a spare name, and the
// next phase's directory is a spare renamed to its key: a run makes about
// as many directories as it runs phases at once. To the phases nothing
// changes: the directory exists, empty or as an interrupted attempt left
// it, when the command starts, and is gone from its path after success.
type Checkpoints struct {
	Dir string // .cairn/checkpoints

	mu     sync.Mutex
	spares []string
	n      int
	used   bool
}

const spareCheckpointPrefix = ".spare-"

// Make creates path, a checkpoint directory, unless it exists (kept from
// an interrupted attempt).
func (c *Checkpoints) Make(path string) error {
	c.mu.Lock()
	c.used = true
	var spare string
	if k := len(c.spares); k > 0 {
		spare = c.spares[k-1]
		c.spares = c.spares[:k-1]
	}
	c.mu.Unlock()
	if spare != "" {
		// rename(2) replaces an empty directory at path and fails on a
		// non-empty one, which is then the interrupted attempt's to use.
		if err := os.Rename(spare, path); err == nil {
			return nil
		}
		c.put(spare)
	}
	return os.MkdirAll(path, 0o755)
}

// Release removes path, the checkpoint directory of a phase that
// succeeded: an empty one becomes a spare.
func (c *Checkpoints) Release(path string) {
	if emptyDir(path) {
		c.mu.Lock()
		c.n++
		spare := filepath.Join(c.Dir, spareCheckpointPrefix+strconv.Itoa(c.n))
		c.mu.Unlock()
		if os.Rename(path, spare) == nil {
			c.put(spare)
			return
		}
	}
	_ = os.RemoveAll(path)
}

func (c *Checkpoints) put(spare string) {
	c.mu.Lock()
	c.spares = append(c.spares, spare)
	c.mu.Unlock()
}

// Cleanup removes the spares, this run's and any a cairn that died left,
// once no phase runs.
func (c *Checkpoints) Cleanup() {
	c.mu.Lock()
	used := c.used
	c.spares = nil
	c.mu.Unlock()
	if !used {
		return
	}
	ents, err := os.ReadDir(c.Dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), spareCheckpointPrefix) {
			_ = os.RemoveAll(filepath.Join(c.Dir, ent.Name()))
		}
	}
}

// emptyDir reports whether path is a directory with nothing in it.
func emptyDir(path string) bool {
	f, err := fsx.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}

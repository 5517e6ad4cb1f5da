package spec

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/internal/fsx"
)

// maxFileRead bounds the size of a file file() reads. Its content is held
// in memory, in the evaluated spec and in every value made from it; a
// file of this size is data for a phase to read, not for the spec.
const maxFileRead = 64 << 20

// ReadFile reads the file at path as file() does (a memo checking what
// the spec read reads it so too): a regular file of at most maxFileRead
// bytes. Anything else is refused before it is read: a FIFO would block
// for ever, /dev/zero never ends. The file is opened non-blocking, so
// that a FIFO swapped in after the stat cannot block the open either,
// and checked again once open.
func ReadFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regularSmall(fi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regularSmall(fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileRead+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileRead {
		return nil, fmt.Errorf("it is larger than %d MiB, the most file() reads", maxFileRead>>20)
	}
	return b, nil
}

func regularSmall(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("it is %s, not a regular file", fsx.FileKind(fi.Mode()))
	}
	if fi.Size() > maxFileRead {
		return fmt.Errorf("it is larger than %d MiB (%d bytes), the most file() reads", maxFileRead>>20, fi.Size())
	}
	return nil
}

// CheckInputFiles reports each input of s named by a plain path (not a
// glob) that exists and is neither a regular file nor a directory (nor a
// symbolic link to one): a FIFO or a device, which cairn could not hash.
// It looks at the files on disk, so it is not part of loading (a memo
// would keep its answer); validate calls it, and run and plan refuse such
// an input when they hash it.
func (s *Spec) CheckInputFiles() hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[string]os.FileMode{}
	for _, p := range s.Phases {
		for i, in := range p.Inputs {
			if hasMeta(in) {
				continue
			}
			mode, ok := seen[in]
			if !ok {
				abs := in
				if !filepath.IsAbs(abs) {
					abs = filepath.Join(s.Dir, filepath.FromSlash(in))
				}
				if fi, err := os.Stat(abs); err == nil {
					mode = fi.Mode()
				}
				seen[in] = mode
			}
			if mode == 0 || mode.IsRegular() || mode.IsDir() {
				continue
			}
			rng := p.DeclRange
			if i < len(p.inputRanges) {
				rng = p.inputRanges[i]
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Input is not a regular file",
				Detail:   fmt.Sprintf("Input %q of phase %q is %s: an input must be a regular file, a directory or a symbolic link to one, whose content cairn hashes. Remove it from inputs or replace it with a regular file.", in, p.Addr, fsx.FileKind(mode)),
				Subject:  rng.Ptr(),
			})
		}
	}
	return diags
}

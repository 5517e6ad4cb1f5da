package inputs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/memories"
	"github.com/cairn-run/cairn/spec"
	"github.com/cairn-run/cairn/workspace"
)

// MissingInputError says that an input names nothing on disk and no phase
// produces it.
type MissingInputError struct {
	Phase string
	Input string
}

func (e *MissingInputError) Error() string {
	return fmt.Sprintf("phase %s: input %q does not exist and no phase produces it; create it or fix the path", e.Phase, e.Input)
}

// File is an input file of a phase: its workspace path and the stat its
// expansion took, which the fingerprint and the digest memory compare.
type File struct {
	Rel string
	St  workspace.FileStat
}

// Finder finds and digests the input files of phases in one workspace.
type Finder struct {
	WS      *workspace.Workspace
	Mem     *memories.Memory
	Workers int                    // goroutines walking directories and hashing files
	Ctx     func() context.Context // hashing stops once it is done
	Report  any                    // told the hashing's progress if a hashmeter.Sink
	// Watched, if set, watches the directories Files walks and notes
	// what the watch does not vouch for (see Watched).
	Watched *Watched
}

// UpstreamReads fills upFiles with every file of p's direct upstream
// phases, by path, and reads with those p reads through its references to
// them.
func UpstreamReads(p *spec.Phase, up map[string][]cache.OutputFile, upFiles, reads map[string]cache.OutputFile) {
	for _, tree := range up {
		for _, f := range tree {
			if f.Type != "dir" {
				upFiles[f.Path] = f
			}
		}
	}
	for upAddr, paths := range p.Upstream {
		for _, f := range up[upAddr] {
			if f.Type == "dir" {
				continue
			}
			if paths == nil {
				reads[f.Path] = f
				continue
			}
			for _, want := range paths {
				if workspace.IsAtOrBelow(f.Path, want) {
					reads[f.Path] = f
				}
			}
		}
	}
}

// Files expands p's input patterns into the workspace files they name
// (sorted by path, each once), leaving out cairn's own directory, p's
// outputs and its upstream phases' files (up, by phase address): the
// upstream files p reads, through its references or its patterns, are
// returned in reads.
func (f *Finder) Files(p *spec.Phase, up map[string][]cache.OutputFile) (files []File, reads map[string]cache.OutputFile, err error) {
	files, _, reads, err = f.files(p, up, nil)
	return files, reads, err
}

// FilesDigested is Files, the small files of directories the memory knows
// no file of hashed as they are found (metered, remembered): digests holds
// their digests, by file, zero for the files Digests is still to hash
// (nil if none was hashed).
func (f *Finder) FilesDigested(p *spec.Phase, up map[string][]cache.OutputFile) (files []File, digests []cache.Digest, reads map[string]cache.OutputFile, err error) {
	h := &coldHash{f: f, phase: p.Addr, ctx: f.Ctx()}
	defer h.done()
	return f.files(p, up, h)
}

func (f *Finder) files(p *spec.Phase, up map[string][]cache.OutputFile, h *coldHash) (files []File, digests []cache.Digest, reads map[string]cache.OutputFile, err error) {
	var upFiles map[string]cache.OutputFile
	if len(up) > 0 {
		upFiles = map[string]cache.OutputFile{}
		reads = map[string]cache.OutputFile{}
	}
	UpstreamReads(p, up, upFiles, reads)
	files, err = f.inputFiles(p, upFiles, reads, h)
	if err != nil {
		return nil, nil, nil, err
	}
	files, digests = sortFiles(files, h.result(len(files)))
	return files, digests, reads, nil
}

// inputFiles is Files with p's upstream files by path (upFiles), adding
// those its patterns name to reads, in the order found; h, if not nil,
// hashes what it may as the files are found.
func (f *Finder) inputFiles(p *spec.Phase, upFiles, reads map[string]cache.OutputFile, h *coldHash) ([]File, error) {
	own := p.OutputPaths()
	skip := func(rel string) bool {
		if rel == workspace.StateDirName || strings.HasPrefix(rel, workspace.StateDirName+"/") {
			return true
		}
		for _, o := range own {
			if workspace.IsAtOrBelow(rel, o) {
				return true
			}
		}
		_, isUp := upFiles[rel]
		return isUp
	}
	files := make([]File, 0, len(p.Inputs))
	for _, pattern := range p.Inputs {
		n0 := len(files)
		n := 0
		plain := !workspace.HasMeta(pattern)
		var st workspace.FileStat
		var err error
		if plain {
			st, err = f.WS.StatRel(pattern)
		}
		if plain && err == nil && !st.Mode.IsDir() && !st.Mode.IsRegular() {
			return nil, workspace.NotRegularInput(p.Addr, pattern, pattern, st.Mode)
		}
		if plain && (err == nil && !st.Mode.IsDir() || errors.Is(err, fs.ErrNotExist)) {
			// A plain file (or nothing), as expand would find it
			// without a walk.
			if err == nil && !skip(pattern) {
				files = append(files, File{Rel: pattern, St: st})
			}
			if err != nil {
				st = workspace.FileStat{}
			}
			f.Watched.note(pattern, st)
		} else {
			v := f.Watched
			if !plain {
				v.sawGlob()
				v = nil // the glob's listing is not watched: no need to watch its walks
			}
			files, err = f.expand(pattern, skip, files, v, h)
			var nr *NotRegularError
			if errors.As(err, &nr) {
				return nil, workspace.NotRegularInput(p.Addr, pattern, nr.Rel, nr.Mode)
			}
			if err != nil {
				return nil, fmt.Errorf("phase %s: input %q: %w", p.Addr, pattern, err)
			}
		}
		n += len(files) - n0
		for path, uf := range upFiles {
			if workspace.MatchesPattern(pattern, path) {
				reads[path] = uf
				n++
			}
		}
		if n == 0 && !workspace.HasMeta(pattern) {
			return nil, &MissingInputError{Phase: p.Addr, Input: pattern}
		}
	}
	return files, nil
}

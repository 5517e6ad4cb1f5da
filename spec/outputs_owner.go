package spec

import (
	"path/filepath"
	"strings"
)

// OutputOwner returns the address of the phase instance that declares
// path as an output, or declares a directory output holding it, as make
// takes a file as a target. path is relative to the workspace
// ("sorted/A.bam", "./sorted/A.bam") or absolute inside it, and is
// cleaned first.
func (s *Spec) OutputOwner(path string) (string, bool) {
	rel, ok := s.workspacePath(path)
	if !ok {
		return "", false
	}
	// Declared outputs never overlap (linkPhases), so at most one
	// output is rel or a directory above it.
	for _, p := range s.Phases {
		for _, o := range p.Outputs {
			if rel == o.Path || strings.HasPrefix(rel, o.Path+"/") {
				return p.Addr, true
			}
		}
	}
	return "", false
}

// OutputPaths lists every declared output path, in declaration order.
func (s *Spec) OutputPaths() []string {
	var out []string
	for _, p := range s.Phases {
		for _, o := range p.Outputs {
			out = append(out, o.Path)
		}
	}
	return out
}

// workspacePath is path as a clean slash-separated path relative to the
// workspace, or false when it lies outside it.
func (s *Spec) workspacePath(path string) (string, bool) {
	if path == "" {
		return "", false
	}
	if filepath.IsAbs(path) {
		if s.Dir == "" {
			return "", false
		}
		rel, err := filepath.Rel(s.Dir, filepath.Clean(path))
		if err != nil {
			return "", false
		}
		path = rel
	}
	clean := cleanRelPath(path)
	if clean == "." || !filepath.IsLocal(filepath.FromSlash(clean)) {
		return "", false
	}
	return clean, true
}

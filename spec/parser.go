package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// DefaultFile is the spec file name looked up in the current directory.
const DefaultFile = "experiment.hcl"

// Options are the caller's settings that affect evaluation.
type Options struct {
	// Vars are values given on the command line as -var NAME=VALUE, in
	// order; a later value for the same name wins.
	Vars []VarValue
	// LookupEnv reads CAIRN_VAR_NAME values; nil means no environment
	// (os.LookupEnv in the CLI).
	LookupEnv func(string) (string, bool)
}

// VarValue is one NAME=VALUE assignment from the command line.
type VarValue struct {
	Name, Value string
}

// Parser reads spec files and remembers every file it read, so
// diagnostics can be rendered with source snippets.
type Parser struct {
	p *hclparse.Parser
}

// NewParser returns a parser with no files read yet.
func NewParser() *Parser { return &Parser{p: hclparse.NewParser()} }

// Files returns the files read so far by name, for hcl.NewDiagnosticTextWriter.
func (p *Parser) Files() map[string]*hcl.File { return p.p.Files() }

// LoadFile reads, decodes and evaluates the spec at path. The returned
// Spec is nil when diags has errors.
func (p *Parser) LoadFile(path string, opts Options) (*Spec, hcl.Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		detail := fmt.Sprintf("cairn could not read %s: %v.", path, err)
		if os.IsNotExist(err) {
			detail = fmt.Sprintf("There is no %s here. Run cairn in the directory that holds the experiment, or name the file with -f FILE.", path)
		}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read spec file", Detail: detail}}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot resolve spec path", Detail: err.Error()}}
	}
	return p.LoadBytes(path, src, filepath.Dir(abs), opts)
}

// LoadBytes decodes and evaluates src as the spec file named filename,
// whose workspace is the absolute directory dir.
func (p *Parser) LoadBytes(filename string, src []byte, dir string, opts Options) (*Spec, hcl.Diagnostics) {
	f, diags := p.p.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	sum := sha256.Sum256(src)
	s := &Spec{File: filename, Dir: dir, Hash: hex.EncodeToString(sum[:])}
	more := decodeFile(s, f.Body, opts)
	diags = append(diags, more...)
	if diags.HasErrors() {
		return nil, diags
	}
	return s, diags
}

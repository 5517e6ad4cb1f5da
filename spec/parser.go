package spec

import (
	"bytes"
	"sort"

	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/zclconf/go-cty/cty"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// DefaultFile is the spec file name looked up in the current directory.
const DefaultFile = "experiment.hcl"

// Options are the caller's settings that affect evaluation.
type Options struct {
	// Vars are values given on the command line as -var NAME=VALUE, in
	// order; a later value for the same name wins.
	Vars []VarValue
	// VarFiles are -var-file paths, HCL attribute files (name = value).
	// Their values rank below -var and above CAIRN_VAR_NAME; a later file
	// wins over an earlier one.
	VarFiles []string
	// LookupEnv reads CAIRN_VAR_NAME values and env(); nil means no
	// environment (os.LookupEnv in the CLI). It may be called from several
	// goroutines at once (a sweep's instances are evaluated side by side).
	LookupEnv func(string) (string, bool)

	// Reads, when set, records what evaluation read from outside the
	// spec (for a memo of it, package spec/memo).
	Reads *Reads
	// ForEach, when set, keeps the keys of for_each expressions from one
	// load to the next (see ForEachMemo).
	ForEach ForEachMemo
}

// VarValue is one NAME=VALUE assignment from the command line, or one
// attribute of a -var-file (File set, Val holding its value).
type VarValue struct {
	Name, Value string

	File  string
	Val   cty.Value
	Range hcl.Range
}

// Parser reads spec files and remembers every file it read, so
// diagnostics can be rendered with source snippets.
type Parser struct {
	p *hclparse.Parser
	// parsed holds the files parsed without errors, by name: one loaded
	// again with the same bytes is not parsed again.
	parsed map[string]*hcl.File
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
	f, diags := p.parseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	var fileVars []VarValue
	for _, vf := range opts.VarFiles {
		vals, d := p.loadVarFile(vf)
		diags = append(diags, d...)
		fileVars = append(fileVars, vals...)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	opts.Vars = append(fileVars, opts.Vars...)
	sum := sha256.Sum256(src)
	s := &Spec{File: filename, Dir: dir, Hash: hex.EncodeToString(sum[:])}
	more := decodeFile(s, f.Body, src, opts)
	diags = append(diags, more...)
	if diags.HasErrors() {
		return nil, diags
	}
	return s, diags
}

// parseHCL parses src as the spec file filename, as hclparse's ParseHCL
// does. A file parsed cleanly before, with the same bytes, is
// not parsed again; one that had errors, or whose bytes changed, is.
func (p *Parser) parseHCL(src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	if f := p.parsed[filename]; f != nil && bytes.Equal(f.Bytes, src) {
		return f, nil
	}
	if diags := checkSource(src, filename, hcl.InitialPos); diags.HasErrors() {
		// The file, unparsed, still gives the messages their snippets.
		p.p.AddFile(filename, &hcl.File{Body: hcl.EmptyBody(), Bytes: src})
		return nil, diags
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	p.p.AddFile(filename, f) // for the messages' snippets
	if !diags.HasErrors() {
		if p.parsed == nil {
			p.parsed = map[string]*hcl.File{}
		}
		p.parsed[filename] = f
	}
	return f, diags
}

// loadVarFile reads a -var-file: HCL attributes, one per variable, whose
// values are constants.
func (p *Parser) loadVarFile(path string) ([]VarValue, hcl.Diagnostics) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read variable file", Detail: fmt.Sprintf("-var-file %s: The configuration file %q could not be read.", path, path)}}
	}
	if diags := checkSource(src, path, hcl.InitialPos); diags.HasErrors() {
		p.p.AddFile(path, &hcl.File{Body: hcl.EmptyBody(), Bytes: src})
		return nil, diags
	}
	f, diags := p.p.ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, diags
	}
	attrs, d := f.Body.JustAttributes()
	diags = append(diags, d...)
	var out []VarValue
	for _, a := range attrs {
		v, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		out = append(out, VarValue{Name: a.Name, File: path, Val: v, Range: a.Expr.Range()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, diags
}

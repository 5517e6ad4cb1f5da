package spec

import (
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/cairn-run/cairn/executor"
	"github.com/cairn-run/cairn/internal/binenc"
	"github.com/cairn-run/cairn/internal/cores"
)

// The memo file is binary (package binenc), not gob: decoding it is on
// every no-op run's start, and gob's reflection would be most of that
// start. Every field of the model is written explicitly; the test
// TestMemoCodecCoversEveryField fills every field of every type by
// reflection and fails if one does not survive a round trip, so a field
// added to the model cannot be silently dropped from the memo.

// memoHeader starts a memo file; its number is the layout's version.
const memoHeader = "cairn-spec-memo 5\n"

func encodeMemo(rec *memoRecord) []byte {
	w := binenc.NewWriter(memoHeader, 256*len(rec.Phases))
	w.Str(rec.Key)
	writeStrMap(w, rec.Files)
	w.NilLen(len(rec.Env), rec.Env == nil)
	for _, k := range sortedKeys(rec.Env) {
		w.Str(k)
		w.Bool(rec.Env[k].Set)
		w.Str(rec.Env[k].Value)
	}
	w.Str(rec.File)
	w.Str(rec.Dir)
	w.Str(rec.Hash)
	writeExperiment(w, &rec.Experiment)
	writeStrMap(w, rec.Variables)
	w.NilLen(len(rec.Pools), rec.Pools == nil)
	for _, k := range sortedKeys(rec.Pools) {
		p := rec.Pools[k]
		w.Str(k)
		w.Str(p.Name)
		w.Int(int64(p.Size))
		writeRange(w, p.DeclRange)
	}
	// Each phase is a nested record (its length, then its bytes), so a
	// reader can cut them apart first and decode them on all cores.
	w.NilLen(len(rec.Phases), rec.Phases == nil)
	pw := &binenc.Writer{}
	for _, p := range rec.Phases {
		pw.B = pw.B[:0]
		writePhase(pw, p)
		w.Len(len(pw.B))
		w.Fixed(pw.B)
	}
	writeStrsMap(w, rec.Blocks)
	return w.Finish()
}

// decodeMemoBytes decodes a memo. The strings of the model are slices of
// b's memory (no copy of a memo of megabytes): the caller hands b over.
func decodeMemoBytes(b []byte) (*memoRecord, error) {
	r, err := binenc.OpenOwned(b, memoHeader)
	if err != nil {
		return nil, err
	}
	rec := &memoRecord{Format: memoFormat}
	rec.Key = r.Str()
	rec.Files = readStrMap(r)
	if n, ok := r.NilLen(); ok {
		rec.Env = make(map[string]envRead, n)
		for i := 0; i < n && r.OK(); i++ {
			k := r.Str()
			rec.Env[k] = envRead{Set: r.Bool(), Value: r.Str()}
		}
	}
	rec.File, rec.Dir, rec.Hash = r.Str(), r.Str(), r.Str()
	readExperiment(r, &rec.Experiment)
	rec.Variables = readStrMap(r)
	if n, ok := r.NilLen(); ok {
		rec.Pools = make(map[string]*Pool, n)
		for i := 0; i < n && r.OK(); i++ {
			k := r.Str()
			p := &Pool{Name: r.Str(), Size: int(r.Int())}
			p.DeclRange = readRange(r)
			rec.Pools[k] = p
		}
	}
	if n, ok := r.NilLen(); ok {
		recs := make([]string, n)
		for i := 0; i < n && r.OK(); i++ {
			recs[i] = r.Str()
		}
		if !r.OK() {
			return nil, r.Err()
		}
		rec.Phases = make([]*Phase, n)
		if err := readPhases(recs, rec.Phases); err != nil {
			return nil, err
		}
	}
	rec.Blocks = readStrsMap(r)
	if err := r.Err(); err != nil {
		return nil, err
	}
	return rec, nil
}

func writeExperiment(w *binenc.Writer, x *Experiment) {
	w.Str(x.Name)
	w.Str(x.Description)
	w.Int(int64(x.Concurrency))
	w.Str(x.CacheDir)
	w.Bool(x.CacheShared)
	w.Str(x.CacheRemote)
	w.Bool(x.CacheRequireSigned)
	writeFloatPtr(w, x.Budget.MaxCost)
	w.Str(x.Executor)
	writeExecutorConfig(w, x.ExecutorConfig)
}

func readExperiment(r *binenc.Reader, x *Experiment) {
	x.Name, x.Description = r.Str(), r.Str()
	x.Concurrency = int(r.Int())
	x.CacheDir = r.Str()
	x.CacheShared = r.Bool()
	x.CacheRemote = r.Str()
	x.CacheRequireSigned = r.Bool()
	x.Budget.MaxCost = readFloatPtr(r)
	x.Executor = r.Str()
	x.ExecutorConfig = readExecutorConfig(r)
}

// writeExecutorConfig writes the settings of each executor: its
// attributes' JSON values, by name.
func writeExecutorConfig(w *binenc.Writer, m map[string]executor.Config) {
	w.NilLen(len(m), m == nil)
	for _, name := range sortedKeys(m) {
		w.Str(name)
		c := m[name]
		w.NilLen(len(c), c == nil)
		for _, k := range sortedKeys(c) {
			w.Str(k)
			w.Str(string(c[k]))
		}
	}
}

func readExecutorConfig(r *binenc.Reader) map[string]executor.Config {
	n, ok := r.NilLen()
	if !ok {
		return nil
	}
	m := make(map[string]executor.Config, n)
	for i := 0; i < n && r.OK(); i++ {
		name := r.Str()
		var c executor.Config
		if k, ok := r.NilLen(); ok {
			c = make(executor.Config, k)
			for j := 0; j < k && r.OK(); j++ {
				attr := r.Str()
				c[attr] = json.RawMessage(r.Str())
			}
		}
		m[name] = c
	}
	return m
}

func writePhase(w *binenc.Writer, p *Phase) {
	w.Str(p.Addr)
	w.Str(p.Block)
	w.Str(p.Key)
	w.Bool(p.HasForEach)
	w.Str(p.Description)
	w.Strs(p.Command)
	w.Bool(p.Shell)
	w.Strs(p.Inputs)
	w.NilLen(len(p.Outputs), p.Outputs == nil)
	for _, o := range p.Outputs {
		w.Str(o.Name)
		w.Str(o.Path)
	}
	writeStrMap(w, p.Params)
	w.Strs(p.Metrics)
	w.Strs(p.Temporary)
	writeStrMap(w, p.Env)
	w.Strs(p.SecretEnv)
	w.Strs(p.PassEnv)
	w.Str(p.Workdir)
	w.Bool(p.Cache)
	w.Bool(p.NoPipefail)
	w.Int(int64(p.Budget.Timeout))
	w.Int(int64(p.Budget.Retries))
	writeFloatPtr(w, p.Budget.MaxCost)
	if p.Budget.MaxIterations == nil {
		w.Bool(false)
	} else {
		w.Bool(true)
		w.Int(*p.Budget.MaxIterations)
	}
	writeStrMap(w, p.EnvRead)
	w.NilLen(len(p.Resources), p.Resources == nil)
	for _, k := range sortedKeys(p.Resources) {
		w.Str(k)
		w.Int(int64(p.Resources[k]))
	}
	w.Str(p.Executor)
	writeExecutorConfig(w, p.ExecutorConfig)
	writeStrsMap(w, p.Upstream)
	writeRange(w, p.DeclRange)
}

// readPhases decodes the phase records recs into phases, side by side on
// all cores for a large spec: the phases are most of a memo's bytes, and
// decoding them lies on the path of every run before its first decision.
func readPhases(recs []string, phases []*Phase) error {
	const chunk = 128
	workers := min(cores.N, (len(recs)+chunk-1)/chunk)
	decode := func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			r := binenc.NewReader(recs[i])
			phases[i] = readPhase(r)
			if err := r.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	if workers <= 1 {
		return decode(0, len(recs))
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	per := (len(recs) + workers - 1) / workers
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, len(recs))
		wg.Go(func() { errs[w] = decode(lo, hi) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func readPhase(r *binenc.Reader) *Phase {
	p := &Phase{}
	p.Addr, p.Block, p.Key = r.Str(), r.Str(), r.Str()
	p.HasForEach = r.Bool()
	p.Description = r.Str()
	p.Command = r.Strs()
	p.Shell = r.Bool()
	p.Inputs = r.Strs()
	if n, ok := r.NilLen(); ok {
		p.Outputs = make([]Output, n)
		for i := range p.Outputs {
			p.Outputs[i] = Output{Name: r.Str(), Path: r.Str()}
		}
	}
	p.Params = readStrMap(r)
	p.Metrics = r.Strs()
	p.Temporary = r.Strs()
	p.Env = readStrMap(r)
	p.SecretEnv = r.Strs()
	p.PassEnv = r.Strs()
	p.Workdir = r.Str()
	p.Cache = r.Bool()
	p.NoPipefail = r.Bool()
	p.Budget.Timeout = time.Duration(r.Int())
	p.Budget.Retries = int(r.Int())
	p.Budget.MaxCost = readFloatPtr(r)
	if r.Bool() {
		v := r.Int()
		p.Budget.MaxIterations = &v
	}
	p.EnvRead = readStrMap(r)
	if n, ok := r.NilLen(); ok {
		p.Resources = make(map[string]int, n)
		for i := 0; i < n && r.OK(); i++ {
			k := r.Str()
			p.Resources[k] = int(r.Int())
		}
	}
	p.Executor = r.Str()
	p.ExecutorConfig = readExecutorConfig(r)
	p.Upstream = readStrsMap(r)
	p.DeclRange = readRange(r)
	return p
}

func writeRange(w *binenc.Writer, rg hcl.Range) {
	w.Str(rg.Filename)
	for _, pos := range []hcl.Pos{rg.Start, rg.End} {
		w.Int(int64(pos.Line))
		w.Int(int64(pos.Column))
		w.Int(int64(pos.Byte))
	}
}

func readRange(r *binenc.Reader) hcl.Range {
	rg := hcl.Range{Filename: r.Str()}
	for _, pos := range []*hcl.Pos{&rg.Start, &rg.End} {
		pos.Line, pos.Column, pos.Byte = int(r.Int()), int(r.Int()), int(r.Int())
	}
	return rg
}

func writeFloatPtr(w *binenc.Writer, f *float64) {
	if f == nil {
		w.Bool(false)
		return
	}
	w.Bool(true)
	w.Float(*f)
}

func readFloatPtr(r *binenc.Reader) *float64 {
	if !r.Bool() {
		return nil
	}
	f := r.Float()
	return &f
}

// Maps are written in key order, with their length plus one (0 for nil).

func writeStrMap(w *binenc.Writer, m map[string]string) {
	w.NilLen(len(m), m == nil)
	for _, k := range sortedKeys(m) {
		w.Str(k)
		w.Str(m[k])
	}
}

func readStrMap(r *binenc.Reader) map[string]string {
	n, ok := r.NilLen()
	if !ok {
		return nil
	}
	m := make(map[string]string, n)
	for i := 0; i < n && r.OK(); i++ {
		k := r.Str()
		m[k] = r.Str()
	}
	return m
}

func writeStrsMap(w *binenc.Writer, m map[string][]string) {
	w.NilLen(len(m), m == nil)
	for _, k := range sortedKeys(m) {
		w.Str(k)
		w.Strs(m[k])
	}
}

func readStrsMap(r *binenc.Reader) map[string][]string {
	n, ok := r.NilLen()
	if !ok {
		return nil
	}
	m := make(map[string][]string, n)
	for i := 0; i < n && r.OK(); i++ {
		k := r.Str()
		m[k] = r.Strs()
	}
	return m
}

package memo

import (
	"errors"
	"sync"

	"github.com/cairn-run/cairn/hint"
	"github.com/cairn-run/cairn/internal/cores"
	"github.com/cairn-run/cairn/spec"
)

// The memo file is binary (package hint), not gob: decoding it is on
// every no-op run's start, and gob's reflection would be most of that
// start. The model's types are written field by field by code generated
// from them (codec_gen.go, see gen_test.go), so a field added to
// the model needs `go generate ./spec/memo`, nothing else: the generated
// layout's hash is part of the header. TestMemoCodecCoversEveryField
// fills every field of every type by reflection and fails if one does
// not survive a round trip.

// memoFile is the memo file's format; memoHeader starts it.
var (
	memoFile   = hint.NewFormat("spec-memo", memoFormat, "spec-memo").WithLayout(memoLayout)
	memoHeader = memoFile.Header()
)

func encodeMemo(rec *memoRecord) []byte {
	w := memoFile.Writer(256 * len(rec.Phases))
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
		w.Str(k)
		writePool(w, rec.Pools[k])
	}
	// Each phase is a nested record (its length, then its bytes), so a
	// reader can cut them apart first and decode them on all cores.
	w.NilLen(len(rec.Phases), rec.Phases == nil)
	pw := &hint.Writer{}
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
	r, err := memoFile.OpenOwned(b)
	if err != nil {
		return nil, err
	}
	rec := &memoRecord{Format: memoFormat}
	rec.Key = r.Str()
	rec.Files = readStrMap(r)
	if n, ok := r.NilLen(); ok {
		rec.Env = make(map[string]spec.EnvRead, n)
		for i := 0; i < n && r.OK(); i++ {
			k := r.Str()
			rec.Env[k] = spec.EnvRead{Set: r.Bool(), Value: r.Str()}
		}
	}
	rec.File, rec.Dir, rec.Hash = r.Str(), r.Str(), r.Str()
	readExperiment(r, &rec.Experiment)
	rec.Variables = readStrMap(r)
	if n, ok := r.NilLen(); ok {
		rec.Pools = make(map[string]*spec.Pool, n)
		for i := 0; i < n && r.OK(); i++ {
			k := r.Str()
			p := &spec.Pool{}
			readPool(r, p)
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
		rec.Phases = make([]*spec.Phase, n)
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

// readPhases decodes the phase records recs into phases, side by side on
// all cores for a large spec: the phases are most of a memo's bytes, and
// decoding them lies on the path of every run before its first decision.
func readPhases(recs []string, phases []*spec.Phase) error {
	const chunk = 128
	workers := min(cores.N, (len(recs)+chunk-1)/chunk)
	decode := func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			r := hint.NewReader(recs[i])
			phases[i] = &spec.Phase{}
			readPhase(r, phases[i])
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

// Maps are written in key order, with their length plus one (0 for nil).

func writeStrMap(w *hint.Writer, m map[string]string) {
	w.NilLen(len(m), m == nil)
	for _, k := range sortedKeys(m) {
		w.Str(k)
		w.Str(m[k])
	}
}

func readStrMap(r *hint.Reader) map[string]string {
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

func writeStrsMap(w *hint.Writer, m map[string][]string) {
	w.NilLen(len(m), m == nil)
	for _, k := range sortedKeys(m) {
		w.Str(k)
		w.Strs(m[k])
	}
}

func readStrsMap(r *hint.Reader) map[string][]string {
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

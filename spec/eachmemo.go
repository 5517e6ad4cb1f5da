package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/cairn-run/cairn/hint"
)

// The spec memo is all or nothing: after any edit of the spec, the whole
// spec is evaluated again. A sweep's for_each is usually the costliest
// expression in it (the keys of 100,000 instances made by nested for
// expressions take HCL most of a second) and the one least often edited:
// one edits the command, the params, another phase. So the keys of each
// for_each over strings are kept beside the memo, under a hash of all
// they were computed from: the expression's text, the values of the
// variables and locals it names, and the cairn build. An expression that
// refers to a phase or calls file() or env() (which read outside the
// spec) is never kept. After an edit elsewhere, the keys are taken from
// there instead of evaluating the expression again.

// eachMemoStore is the for_each memo file: per block, sorted by name, the
// block's name, the hash and the keys.
var eachMemoStore = hint.Store[map[string]eachRecord]{
	Format: hint.NewFormat("each-memo", 1, "each-memo"),
	Perm:   0o600,
	SizeHint: func(recs map[string]eachRecord) int {
		size := 0
		for _, r := range recs {
			size += 80 + 12*len(r.keys)
		}
		return size
	},
	Encode: func(w *hint.Writer, recs map[string]eachRecord) {
		w.Len(len(recs))
		for _, name := range sortedKeys(recs) {
			w.Str(name)
			w.Str(recs[name].hash)
			w.Strs(recs[name].keys)
		}
	},
	Decode: func(r *hint.Reader) (map[string]eachRecord, error) {
		n := r.Len()
		recs := make(map[string]eachRecord, min(n, 1024))
		for i := 0; i < n && r.OK(); i++ {
			name := r.Str()
			recs[name] = eachRecord{hash: r.Str(), keys: r.Strs()}
		}
		return recs, nil
	},
}

// eachMemo is the for_each memory of one load: what the file held, and
// what this load computed (written back when the load succeeds).
type eachMemo struct {
	path string
	src  []byte // the spec's text, for the expressions' own

	loaded bool
	old    map[string]eachRecord // block name -> its record
	fresh  map[string]eachRecord
}

// eachRecord is a for_each's keys and the hash of what they came from.
type eachRecord struct {
	hash string
	keys []string
}

// testHookEachMemo, set by tests only, is called with a block's name when
// its instances' keys come from the for_each memo.
var testHookEachMemo func(block string)

// eachMemoPath is the for_each memo kept beside the spec memo memoPath.
func eachMemoPath(memoPath string) string {
	return strings.TrimSuffix(memoPath, ".memo") + ".each"
}

// hashFor returns the hash a for_each record of rp must carry, or false
// when rp's for_each is not kept.
func (m *eachMemo) hashFor(rp *rawPhase, sc *scope) (string, bool) {
	if len(rp.forEachRefs) > 0 {
		return "", false
	}
	rng := rp.forEach.Range()
	if rng.Start.Byte < 0 || rng.End.Byte > len(m.src) || rng.Start.Byte > rng.End.Byte {
		return "", false
	}
	if x, ok := rp.forEach.(hclsyntax.Expression); !ok || readsOutside(x) {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s%s\n%d\n", eachMemoStore.Format.Header(), exeID(), rng.End.Byte-rng.Start.Byte)
	h.Write(m.src[rng.Start.Byte:rng.End.Byte])
	names := map[string]cty.Value{}
	for _, tr := range rp.forEach.Variables() {
		root := tr.RootName()
		var from map[string]cty.Value
		switch root {
		case "var":
			from = sc.vars
		case "local":
			from = sc.locals
		default:
			return "", false
		}
		if len(tr) < 2 {
			return "", false
		}
		step, ok := tr[1].(hcl.TraverseAttr)
		if !ok {
			return "", false
		}
		v, ok := from[step.Name]
		if !ok || !v.IsWhollyKnown() || v.ContainsMarked() {
			return "", false
		}
		names[root+"."+step.Name] = v
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := names[k]
		t, err := ctyjson.MarshalType(v.Type())
		if err != nil {
			return "", false
		}
		b, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			return "", false
		}
		fmt.Fprintf(h, "\n%s %d %d\n", k, len(t), len(b))
		h.Write(t)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// readsOutside reports whether x calls file() or env().
func readsOutside(x hclsyntax.Expression) bool {
	found := false
	hclsyntax.VisitAll(x, func(n hclsyntax.Node) hcl.Diagnostics {
		if call, ok := n.(*hclsyntax.FunctionCallExpr); ok && (call.Name == "file" || call.Name == "env") {
			found = true
		}
		return nil
	})
	return found
}

// lookup returns the instances of rp kept for hash, or false.
func (m *eachMemo) lookup(rp *rawPhase, hash string) ([]eachItem, bool) {
	if !m.loaded {
		m.loaded = true
		m.old, _ = eachMemoStore.Load(m.path)
	}
	rec, ok := m.old[rp.name]
	if !ok || rec.hash != hash {
		return nil, false
	}
	items := make([]eachItem, len(rec.keys))
	for i, k := range rec.keys {
		items[i] = eachItem{key: k, value: cty.StringVal(k)}
	}
	m.keepRecord(rp.name, rec)
	if testHookEachMemo != nil {
		testHookEachMemo(rp.name)
	}
	return items, true
}

// keep records rp's instances under hash, when each one's value is its
// key (a for_each over strings): other values are not kept.
func (m *eachMemo) keep(rp *rawPhase, hash string, items []eachItem) {
	keys := make([]string, len(items))
	for i, it := range items {
		if !it.value.RawEquals(cty.StringVal(it.key)) {
			return
		}
		keys[i] = it.key
	}
	m.keepRecord(rp.name, eachRecord{hash: hash, keys: keys})
}

// keepRecord puts rec in what this load writes back.
func (m *eachMemo) keepRecord(block string, rec eachRecord) {
	if m.fresh == nil {
		m.fresh = map[string]eachRecord{}
	}
	m.fresh[block] = rec
}

// write replaces the file with the records of this load.
func (m *eachMemo) write() error {
	if len(m.fresh) == 0 {
		return hint.Remove(m.path)
	}
	return eachMemoStore.Save(m.path, m.fresh)
}

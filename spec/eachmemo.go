package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// A sweep's for_each is usually the costliest expression of a spec and
// the one least often edited, so a caller may keep the keys of each
// for_each over strings from one load to the next (package spec/memo
// does, beside the spec memo), under a hash of all they were computed
// from: the expression's text, the values of the variables and locals it
// names, and the memory's own salt (its format and the cairn build). An
// expression that refers to a phase or calls file() or env() (which read
// outside the spec) is never kept. After an edit elsewhere in the spec,
// the keys are taken from the memory instead of evaluating the
// expression again.

// ForEachMemo keeps the keys of for_each expressions between loads (set
// it in Options.ForEach). It is a hint: a record it does not have, or
// has under another hash, costs an evaluation, never a wrong model.
type ForEachMemo interface {
	// Salt starts every hash: a change to it makes every record a miss.
	Salt() string
	// Lookup returns the keys kept for block under hash, or false.
	Lookup(block, hash string) (keys []string, ok bool)
	// Keep records block's keys under hash.
	Keep(block, hash string, keys []string)
}

// eachMemo is the for_each memory of one load and the spec's text (the
// expressions' own text is hashed).
type eachMemo struct {
	memo ForEachMemo
	src  []byte
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
	fmt.Fprintf(h, "%s\n%d\n", m.memo.Salt(), rng.End.Byte-rng.Start.Byte)
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
	keys, ok := m.memo.Lookup(rp.name, hash)
	if !ok {
		return nil, false
	}
	items := make([]eachItem, len(keys))
	for i, k := range keys {
		items[i] = eachItem{key: k, value: cty.StringVal(k)}
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
	m.memo.Keep(rp.name, hash, keys)
}

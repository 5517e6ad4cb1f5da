package keydiff

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-run/cairn/cache"
)

func inputs(n int, edit map[string]string) []cache.Component {
	comps := []cache.Component{{Kind: KindCommand, Value: `["sh","-c","x"]`}}
	for i := range n {
		name := fmt.Sprintf("in/d%03d/f%06d", i/1000, i)
		v := "-:" + cache.HashBytes([]byte(name)).String()
		if e, ok := edit[name]; ok {
			if e == "" {
				continue
			}
			v = e
		}
		comps = append(comps, cache.Component{Kind: KindInput, Name: name, Value: v})
	}
	return comps
}

// Explaining a miss against an entry of 200,000 inputs in chunks reads
// only the chunks that differ, and names the file.
func TestChangedReadsOnlyDifferingChunks(t *testing.T) {
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200000
	prev := inputs(n, nil)
	e := &cache.Entry{Format: cache.EntryFormat, Key: cache.ComputeKey(prev), Phase: "p", Components: prev}
	if err := c.PutEntry(e); err != nil {
		t.Fatal(err)
	}
	head, err := c.GetEntryHead(e.Key)
	if err != nil {
		t.Fatal(err)
	}
	edited := "-:" + cache.HashBytes([]byte("edited")).String()
	for _, tc := range []struct {
		name string
		cur  []cache.Component
		want []string
	}{
		{"edited", inputs(n, map[string]string{"in/d123/f123456": edited}), []string{"input in/d123/f123456 changed"}},
		{"removed", inputs(n, map[string]string{"in/d007/f007007": ""}), []string{"input in/d007/f007007 removed"}},
		{"added", append(inputs(n, nil), cache.Component{Kind: KindInput, Name: "in/d050/f050000a", Value: edited}), []string{"input in/d050/f050000a added"}},
		{"command", append([]cache.Component{{Kind: KindCommand, Value: `["sh","-c","y"]`}}, inputs(n, nil)[1:]...), []string{`command changed: "x" → "y"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.ChunkReads()
			old, now, err := Changed(head, cache.NewKeyed(tc.cur), c.ReadChunk)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, Reasons(old, now, nil)); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
			if reads := c.ChunkReads() - before; reads > 2 {
				t.Errorf("read %d chunks of %d, want at most 2", reads, len(head.Chunks))
			}
		})
	}
}

// BenchmarkEditedInput is what a run does with a phase of 200,000 inputs
// after one of them was edited: its key, the miss explained against the
// last result, the new result stored.
func BenchmarkEditedInput(b *testing.B) {
	c, err := cache.Open(filepath.Join(b.TempDir(), "cache"))
	if err != nil {
		b.Fatal(err)
	}
	comps := inputs(200000, nil)
	prev := &cache.Entry{Format: cache.EntryFormat, Key: cache.ComputeKey(comps), Phase: "p", Components: comps}
	if err := c.PutEntry(prev); err != nil {
		b.Fatal(err)
	}
	head, err := c.GetEntryHead(prev.Key)
	if err != nil {
		b.Fatal(err)
	}
	edited := slices.Clone(comps)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		edited[123456].Value = "-:" + cache.HashBytes([]byte(strconv.Itoa(i))).String()
		keyed := cache.NewKeyed(edited)
		old, now, err := Changed(head, keyed, c.ReadChunk)
		if err != nil {
			b.Fatal(err)
		}
		if r := Reasons(old, now, nil); len(r) != 1 {
			b.Fatalf("reasons %q, want one", r)
		}
		e := &cache.Entry{Format: cache.EntryFormat, Key: keyed.Key(), Phase: "p", Components: keyed.Components(), Keyed: keyed}
		if err := c.PutEntry(e); err != nil {
			b.Fatal(err)
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/cairn-run/cairn/keydiff"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/engine"
)

type whyOptions struct {
	JSON bool
	All  bool
}

func newWhyCommand(g *globals) *cobra.Command {
	var opts whyOptions
	cmd := &cobra.Command{
		Use:   "why PHASE...",
		Short: "Show, field by field, how a phase's key differs from its last cached result",
		Long: `why compares the key components of each PHASE (a for_each phase's name
stands for all its instances) with those of the result they are checked
against: the cached result of the current key when there is one, else the
phase's last result in this workspace. The components are exactly what is
hashed into the key, so this is the whole reason a phase reruns.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWhy(g, opts, args, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the comparison as JSON")
	cmd.Flags().BoolVar(&opts.All, "all", false, "list unchanged fields too")
	addPhaseCompletion(g, cmd)
	return cmd
}

func runWhy(g *globals, opts whyOptions, names []string, out io.Writer) error {
	_, eng, err := g.openEngine(nil)
	if err != nil {
		return err
	}
	ws, err := eng.Why(names)
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(ws)
	}
	for i, w := range ws {
		if i > 0 {
			fmt.Fprintln(out)
		}
		writeWhy(out, w, opts.All)
	}
	return nil
}

// writeWhy renders one phase's comparison: what a run would do, the
// result compared with, then a table of the fields that differ.
func writeWhy(w io.Writer, y *engine.Why, all bool) {
	fmt.Fprintf(w, "%s: %s\n", y.Phase, y.Action)
	for _, r := range y.Reasons {
		fmt.Fprintf(w, "  because: %s\n", r)
	}
	fmt.Fprintf(w, "  key now: %s\n", shortKey(y.Key))
	if a := y.Against; a != nil {
		who := strings.Trim(a.User+"@"+a.Host, "@")
		if who != "" {
			who = " by " + who
		}
		rel := "its cached result"
		if a.Key != y.Key {
			rel = "its last result"
		}
		fmt.Fprintf(w, "  compared with %s: key %s, stored %s%s\n", rel, shortKey(a.Key), a.Created.UTC().Format("2006-01-02 15:04:05 UTC"), who)
		if a.SignedBy != "" {
			fmt.Fprintf(w, "  signed by %s\n", a.SignedBy)
		}
	}
	if y.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", y.Note)
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  \tfield\twas\tnow\n")
	same, shown := 0, 0
	for _, f := range y.Fields {
		if f.Change == keydiff.FieldSame && !all {
			same++
			continue
		}
		mark := map[string]string{keydiff.FieldSame: " ", keydiff.FieldChanged: "~", keydiff.FieldAdded: "+", keydiff.FieldRemoved: "-"}[f.Change]
		was, now := f.Old, f.New
		switch f.Change {
		case keydiff.FieldSame:
			was = "="
		case keydiff.FieldAdded:
			was = "(none)"
		case keydiff.FieldRemoved:
			now = "(none)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", mark, fieldName(f), was, now)
		shown++
	}
	tw.Flush()
	if shown > 0 {
		for _, line := range strings.SplitAfter(buf.String(), "\n") {
			io.WriteString(w, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n")))
		}
	}
	switch {
	case y.Against == nil:
	case shown == 0:
		fmt.Fprintf(w, "  all %d fields equal those of the result compared with\n", same)
	case same > 0:
		fmt.Fprintf(w, "  %d more fields unchanged (--all lists them)\n", same)
	}
}

func fieldName(f keydiff.Field) string {
	if f.Name == "" {
		return f.Kind
	}
	return f.Kind + " " + f.Name
}

func shortKey(k string) string {
	if len(k) > 12 {
		return k[:12]
	}
	return k
}

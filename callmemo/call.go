package callmemo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/runrec"
)

// Call names one memoised function call of a language binding (the
// Python module): the function's qualified name, the version its author
// gave, and the canonical JSON of its arguments.
type Call struct {
	Function string
	Version  string
	Args     string
}

// CallRecord is what a memoised function call left: its JSON result (or
// the JSON description of the exception it raised, when Raised) and what
// it reported spending while it ran.
type CallRecord struct {
	Result json.RawMessage
	Raised bool
	Spend  runrec.Spend
}

// callComponents builds the key of a memoised function call. A
// secret's value in the arguments enters the key as its name, as it does
// in a memoised command's argv, so that it neither leaks into the entry
// (keys are stored in clear) nor changes the key.
func callComponents(call Call, environ []string) []cache.Component {
	args := call.Args
	names := secretNames(environ)
	sort.Slice(names, func(i, j int) bool {
		vi, _ := lookupEnv(environ, names[i])
		vj, _ := lookupEnv(environ, names[j])
		return len(vi) > len(vj)
	})
	for _, n := range names {
		if v, ok := lookupEnv(environ, n); ok && v != "" {
			args = strings.ReplaceAll(args, v, "(secret "+n+")")
		}
	}
	return []cache.Component{
		{Kind: "memo", Name: "format", Value: "call 1"},
		{Kind: "memo", Name: "function", Value: call.Function},
		{Kind: "memo", Name: "version", Value: call.Version},
		{Kind: "memo", Name: "args", Value: args},
	}
}

func secretNames(environ []string) []string {
	list, ok := lookupEnv(environ, "CAIRN_SECRET_NAMES")
	if !ok || list == "" {
		return nil
	}
	return strings.Split(list, ",")
}

// CallKey returns the cache key of a memoised function call.
func CallKey(call Call, environ []string) cache.ActionID {
	return cache.ComputeKey(callComponents(call, environ))
}

// LookupCall returns the recorded result of a memoised function call, or
// nil when the cache has none (an entry whose result blob is missing or
// corrupt counts as none: the call runs again).
func LookupCall(c *remote.Tiered, call Call, environ []string) (*CallRecord, error) {
	e, err := c.GetEntry(CallKey(call, environ))
	if errors.Is(err, cache.ErrNotFound) || errors.Is(err, cache.ErrCorrupt) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b, err := c.ReadEntryBlob(e, e.Stdout)
	if errors.Is(err, cache.ErrNotFound) || errors.Is(err, cache.ErrCorrupt) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		// Not written by RecordCall: another kind of entry under a key
		// this format cannot produce. Run the call.
		return nil, nil
	}
	return &CallRecord{Result: b, Raised: e.ExitCode != 0, Spend: runrec.Spend{Cost: e.Cost, Iterations: e.Iterations}}, nil
}

// RecordCall stores the result of a memoised function call. It returns
// "" when the call is recorded, else why it is not: a result holding the
// value of a secret_env variable is passed on to the caller but never
// recorded. The first recorded result of a key stays (first writer wins).
func RecordCall(c *remote.Tiered, call Call, rec CallRecord, environ []string) (string, error) {
	if !json.Valid(rec.Result) {
		return "", errors.New("the result is not valid JSON")
	}
	if name := secretInBytes(environ, rec.Result); name != "" {
		return "not cached: the result holds the value of secret " + name, nil
	}
	comps := callComponents(call, environ)
	d, err := c.PutBytes(rec.Result)
	if err != nil {
		return "", fmt.Errorf("record the call in the cache: %w", err)
	}
	exit := 0
	if rec.Raised {
		exit = 1
	}
	host, _ := os.Hostname()
	entry := &cache.Entry{
		Format:     cache.EntryFormat,
		Key:        cache.ComputeKey(comps),
		Phase:      "memo",
		Components: comps,
		ExitCode:   exit,
		Stdout:     d,
		Cost:       rec.Spend.Cost,
		Iterations: rec.Spend.Iterations,
		Created:    time.Now().UTC(),
		Host:       host,
	}
	if err := c.PutEntry(entry); err != nil {
		return "", fmt.Errorf("record the call in the cache: %w", err)
	}
	return "", nil
}

// secretInBytes returns the name of a secret_env variable whose value
// appears in b, or "". Values shorter than four bytes are not looked
// for, as by leakedSecret.
func secretInBytes(environ []string, b []byte) string {
	for _, n := range secretNames(environ) {
		if v, ok := lookupEnv(environ, n); ok && len(v) >= 4 && bytes.Contains(b, []byte(v)) {
			return n
		}
	}
	return ""
}

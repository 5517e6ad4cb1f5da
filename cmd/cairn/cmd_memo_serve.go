package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cairn-run/cairn/cache/remote"
	"github.com/cairn-run/cairn/callmemo"
	"github.com/cairn-run/cairn/runrec"
)

// memoServeProtocol is the version of the line protocol of cairn
// memo-serve; a client asking for another is answered with an error.
const memoServeProtocol = 1

// memoRequest is one line a client writes to cairn memo-serve.
type memoRequest struct {
	Protocol int    `json:"protocol"`
	Op       string `json:"op"`
	Function string `json:"function"`
	Version  string `json:"version"`
	Args     string `json:"args"`
	// Put only: the call's JSON result (or its exception's description,
	// when Raised) and the report lines it wrote while it ran.
	Result json.RawMessage `json:"result,omitempty"`
	Raised bool            `json:"raised,omitempty"`
	Report string          `json:"report,omitempty"`
}

// memoResponse is the line cairn memo-serve answers a request with.
type memoResponse struct {
	Error      string          `json:"error,omitempty"`
	Hit        bool            `json:"hit,omitempty"`
	Raised     bool            `json:"raised,omitempty"`
	Cost       float64         `json:"cost,omitempty"`
	Iterations int64           `json:"iterations,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Stored     bool            `json:"stored,omitempty"`
	Reason     string          `json:"reason,omitempty"`
}

func newMemoServeCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "memo-serve",
		Short: "Serve memoised function calls over stdin and stdout (the Python module's helper)",
		Long: `Serve memoised function calls of a program over stdin and stdout, one JSON
object a line each way, until stdin ends. The Python module (python/ in
cairn's repository) starts one per process; the cache, its keys,
verification and signatures are cairn's, as for cairn memo.

A request is {"protocol": 1, "op": "get" or "put", "function": NAME,
"version": V, "args": CANONICAL_JSON}; a put adds "result" (JSON), "raised"
(true when the result describes an exception) and "report" (the report
lines the call wrote). A get is answered {"hit": true, "result": ...,
"raised": ..., "cost": ..., "iterations": ...} or {}; a put {"stored": true}
or {"reason": WHY_NOT}; a failed request {"error": MESSAGE}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var c *remote.Tiered
			var err error
			if dir := os.Getenv("CAIRN_CACHE_DIR"); dir != "" && g.CacheDir == "" {
				c, err = g.openCache(dir, nil)
			} else {
				c, err = g.looseCache()
			}
			if err != nil {
				return err
			}
			// A Ctrl-C or SIGTERM ends the helper between requests, never
			// in the middle of recording a call.
			ctx := g.watchContext(cmd.Context())
			lines := make(chan []byte)
			readErr := make(chan error, 1)
			go func() {
				r := bufio.NewReaderSize(os.Stdin, 64<<10)
				for {
					line, err := r.ReadBytes('\n')
					if len(line) > 0 {
						lines <- line
					}
					if err != nil {
						readErr <- err
						return
					}
				}
			}()
			out := bufio.NewWriter(cmd.OutOrStdout())
			environ := os.Environ()
			for {
				select {
				case <-ctx.Done():
					return nil
				case err := <-readErr:
					if err == io.EOF {
						return nil
					}
					return fmt.Errorf("read a request: %w", err)
				case line := <-lines:
					resp := serveMemo(c, line, environ)
					b, err := json.Marshal(resp)
					if err != nil {
						b, _ = json.Marshal(memoResponse{Error: err.Error()})
					}
					out.Write(append(b, '\n'))
					if err := out.Flush(); err != nil {
						return nil // the client went away
					}
				}
			}
		},
	}
}

func serveMemo(c *remote.Tiered, line []byte, environ []string) memoResponse {
	var req memoRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return memoResponse{Error: fmt.Sprintf("not a request: %v", err)}
	}
	if req.Protocol != memoServeProtocol {
		return memoResponse{Error: fmt.Sprintf("protocol %d is not known to this cairn (it speaks %d): use the Python module of the same cairn release", req.Protocol, memoServeProtocol)}
	}
	if req.Function == "" {
		return memoResponse{Error: "no function named"}
	}
	call := callmemo.Call{Function: req.Function, Version: req.Version, Args: req.Args}
	switch req.Op {
	case "get":
		rec, err := callmemo.LookupCall(c, call, environ)
		if err != nil {
			return memoResponse{Error: err.Error()}
		}
		if rec == nil {
			return memoResponse{}
		}
		return memoResponse{Hit: true, Result: rec.Result, Raised: rec.Raised, Cost: rec.Spend.Cost, Iterations: rec.Spend.Iterations}
	case "put":
		rec := callmemo.CallRecord{Result: req.Result, Raised: req.Raised, Spend: runrec.SumReport([]byte(req.Report))}
		why, err := callmemo.RecordCall(c, call, rec, environ)
		if err != nil {
			return memoResponse{Error: err.Error()}
		}
		if why != "" {
			return memoResponse{Reason: why}
		}
		return memoResponse{Stored: true}
	default:
		return memoResponse{Error: fmt.Sprintf("unknown op %q (get or put)", req.Op)}
	}
}

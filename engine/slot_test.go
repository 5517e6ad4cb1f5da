package engine

import (
	"testing"
	"time"
)

// TestAwaitUpstreamsGivesSlotBack: a phase whose upstream is still storing
// its result gives its job slot back while it waits (so another phase's
// command can run in it) and asks for one again before its command
// starts; a phase whose upstream is already over keeps its slot and waits
// for nothing.
func TestAwaitUpstreamsGivesSlotBack(t *testing.T) {
	s := newSetup(t, map[string]string{"experiment.hcl": `
phase "a" {
  command = "write out/a.txt a"
  outputs = { o = "out/a.txt" }
}
phase "b" {
  command = "cp ${phase.a.outputs.o} out/b.txt"
  outputs = ["out/b.txt"]
}
`})
	r := &runner{
		e:       s.engine(t),
		results: make(chan phaseResult),
		storing: map[string]chan struct{}{"a": make(chan struct{})},
		res:     &RunResult{Failures: map[string]error{}},
	}
	done := make(chan string)
	go func() { done <- r.awaitUpstreams("b") }()
	next := func(what string) phaseResult {
		t.Helper()
		select {
		case pr := <-r.results:
			return pr
		case u := <-done:
			t.Fatalf("awaitUpstreams returned %q before %s", u, what)
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s after 10s", what)
		}
		return phaseResult{}
	}
	if pr := next("yield"); !pr.yield || pr.addr != "b" {
		t.Fatalf("first message %+v, want b yielding its slot", pr)
	}
	select {
	case pr := <-r.results:
		t.Fatalf("message %+v while the upstream is still storing", pr)
	case u := <-done:
		t.Fatalf("awaitUpstreams returned %q while the upstream is still storing", u)
	case <-time.After(50 * time.Millisecond):
	}
	r.over("a")
	pr := next("regrant")
	if pr.regrant == nil || pr.addr != "b" {
		t.Fatalf("second message %+v, want b asking for a slot", pr)
	}
	select {
	case u := <-done:
		t.Fatalf("awaitUpstreams returned %q before its slot was granted", u)
	case <-time.After(50 * time.Millisecond):
	}
	close(pr.regrant)
	select {
	case u := <-done:
		if u != "" {
			t.Fatalf("awaitUpstreams = %q, want \"\" (a succeeded)", u)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("awaitUpstreams did not return after its slot was granted")
	}

	// The upstream is over already: no message, no wait.
	go func() { done <- r.awaitUpstreams("b") }()
	select {
	case u := <-done:
		if u != "" {
			t.Fatalf("awaitUpstreams = %q, want \"\"", u)
		}
	case pr := <-r.results:
		t.Fatalf("message %+v although the upstream is over", pr)
	case <-time.After(10 * time.Second):
		t.Fatal("awaitUpstreams waited although the upstream is over")
	}
}

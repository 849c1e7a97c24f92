package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestE2EFork: a fork of a live Codex thread is a side app-server that
// carries the conversation so far, answers with its token usage, stores no
// rollout, and leaves the live thread's next request free of what was
// asked of the fork.
func TestE2EFork(t *testing.T) {
	env := newE2E(t)
	ctx := ctxT(t)
	h := New(env.cfg)
	if p := h.Probe(ctx); !p.Has(core.CapSessionFork) {
		t.Fatalf("probe: session.fork not available: %+v", p.Capabilities)
	}
	var c adaptertest.Events
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(ctx) })
	env.model.Enqueue(fakemodel.Reply{Text: "LIVE-ONE noted"})
	if _, err := l.Prompt(ctx, text("remember the word PELICAN-7")); err != nil {
		t.Fatal(err)
	}
	fk, err := l.(core.Forker).Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.model.Enqueue(fakemodel.Reply{Text: `{"summary":"FORK-REPLY"}`, InputTokens: 1234})
	r, err := fk.Ask(ctx, "FORK-ASK what was the word?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "FORK-REPLY") {
		t.Errorf("fork reply %q", r.Text)
	}
	if r.Usage == nil || r.Usage.InputTokens+r.Usage.CacheReadTokens == 0 {
		t.Errorf("fork usage %+v", r.Usage)
	}
	rs := env.model.Requests()
	last := rs[len(rs)-1]
	if !strings.Contains(string(last.Body), "PELICAN-7") || !strings.Contains(last.LastUserText, "FORK-ASK") {
		t.Errorf("the fork's request did not carry the conversation: %q", last.LastUserText)
	}
	if err := fk.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var rollouts []string
	filepath.Walk(filepath.Join(env.cfg.CodexHome, "sessions"), func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			rollouts = append(rollouts, filepath.Base(p))
		}
		return nil
	})
	if len(rollouts) != 1 || !strings.Contains(rollouts[0], l.NativeID()) {
		t.Errorf("rollouts after the fork: %v, want only the live thread's", rollouts)
	}
	env.model.Enqueue(fakemodel.Reply{Text: "LIVE-TWO"})
	if _, err := l.Prompt(ctx, text("and now?")); err != nil {
		t.Fatal(err)
	}
	rs = env.model.Requests()
	body := string(rs[len(rs)-1].Body)
	if strings.Contains(body, "FORK-ASK") || strings.Contains(body, "FORK-REPLY") {
		t.Errorf("the live thread's next request carries the fork's exchange")
	}
	if !strings.Contains(body, "PELICAN-7") || !strings.Contains(body, "LIVE-ONE") {
		t.Errorf("the live thread's next request lost the turn before")
	}
	for _, e := range c.OfKind(core.KindAssistantMessage) {
		if strings.Contains(string(e.Payload), "FORK-REPLY") {
			t.Errorf("the fork's reply reached the live session's sink")
		}
	}
}

// TestE2EForkReusesTheSideProcess: a fork whose turn ended cleanly leaves
// its side process for the session's next fork, which forks the live
// thread as it stands (not the earlier fork's exchange) in the same
// process; closing the session stops that process.
func TestE2EForkReusesTheSideProcess(t *testing.T) {
	env := newE2E(t)
	ctx := ctxT(t)
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(ctx) })
	env.model.Enqueue(fakemodel.Reply{Text: "LIVE-ONE noted"})
	if _, err := l.Prompt(ctx, text("remember the word PELICAN-7")); err != nil {
		t.Fatal(err)
	}
	ask := func(q, a string) *proc {
		t.Helper()
		fk, err := l.(core.Forker).Fork(ctx)
		if err != nil {
			t.Fatal(err)
		}
		env.model.Enqueue(fakemodel.Reply{Text: a})
		r, err := fk.Ask(ctx, q)
		if err != nil || !strings.Contains(r.Text, a) {
			t.Fatalf("fork reply %q, %v", r.Text, err)
		}
		p := fk.(*fork).side.p
		if err := fk.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := ask("FORK-ASK-ONE what was the word?", "FORK-REPLY-ONE")
	env.model.Enqueue(fakemodel.Reply{Text: "LIVE-TWO noted"})
	if _, err := l.Prompt(ctx, text("and remember HERON-3")); err != nil {
		t.Fatal(err)
	}
	second := ask("FORK-ASK-TWO which words?", "FORK-REPLY-TWO")
	if second != first {
		t.Errorf("the second fork ran in process %d, not in the first fork's %d", second.Cmd.Process.Pid, first.Cmd.Process.Pid)
	}
	rs := env.model.Requests()
	body := string(rs[len(rs)-1].Body)
	if !strings.Contains(body, "FORK-ASK-TWO") || !strings.Contains(body, "PELICAN-7") || !strings.Contains(body, "HERON-3") {
		t.Errorf("the second fork's request does not hold the live thread as it stands")
	}
	if strings.Contains(body, "FORK-ASK-ONE") || strings.Contains(body, "FORK-REPLY-ONE") {
		t.Errorf("the second fork's request holds the first fork's exchange")
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !first.exited() {
		t.Errorf("the side process %d still runs after the session closed", first.Cmd.Process.Pid)
	}
}

// TestE2EForkOnTheSpareDuringALiveTurn: a fork made while a live turn
// runs, after several turns, on the side process an earlier fork left,
// holds the live conversation as it stands and not the earlier fork's
// exchange. (When Codex refuses thread/fork on that process, "thread
// history projection ... is behind durable rollout", as it did once in
// BenchmarkCheckpointMethods when the fork and a live turn started
// together, Fork forks on a new process; this test does not force that.)
func TestE2EForkOnTheSpareDuringALiveTurn(t *testing.T) {
	env := newE2E(t)
	ctx := ctxT(t)
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(ctx) })
	env.model.Enqueue(fakemodel.Reply{Text: "LIVE-ONE noted"})
	if _, err := l.Prompt(ctx, text("remember the word PELICAN-7")); err != nil {
		t.Fatal(err)
	}
	fk, err := l.(core.Forker).Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.model.Enqueue(fakemodel.Reply{Text: "FORK-REPLY-ONE"})
	if _, err := fk.Ask(ctx, "FORK-ASK-ONE what was the word?"); err != nil {
		t.Fatal(err)
	}
	first := fk.(*fork).side.p
	if err := fk.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"HERON-3", "OSPREY-5", "EGRET-9"} {
		env.model.Enqueue(fakemodel.Reply{Text: "noted " + w})
		if _, err := l.Prompt(ctx, text("remember "+w)); err != nil {
			t.Fatal(err)
		}
	}
	env.model.Enqueue(fakemodel.Reply{Hang: true})
	done := make(chan error, 1)
	go func() { _, err := l.Prompt(ctx, text("LIVE-TWO carry on")); done <- err }()
	for len(env.model.Requests()) == 0 || !strings.Contains(env.model.Requests()[len(env.model.Requests())-1].LastUserText, "LIVE-TWO") {
		select {
		case err := <-done:
			t.Fatalf("the live turn ended early: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	fk, err = l.(core.Forker).Fork(ctx)
	if err != nil {
		t.Fatalf("a fork during the live turn: %v", err)
	}
	env.model.Enqueue(fakemodel.Reply{Text: "FORK-REPLY-TWO"})
	r, err := fk.Ask(ctx, "FORK-ASK-TWO which word?")
	if err != nil || !strings.Contains(r.Text, "FORK-REPLY-TWO") {
		t.Fatalf("fork reply %q, %v", r.Text, err)
	}
	t.Logf("the fork during the live turn ran in the earlier fork's process: %v", fk.(*fork).side.p == first)
	rs := env.model.Requests()
	if body := string(rs[len(rs)-1].Body); !strings.Contains(body, "PELICAN-7") || !strings.Contains(body, "EGRET-9") || strings.Contains(body, "FORK-ASK-ONE") {
		t.Errorf("the fork's request does not hold the live conversation, or holds the earlier fork's")
	}
	if err := fk.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
}

// TestE2EForkSideProcessOwnsItsDatabasesAndGoesWhenIdle: with a state
// folder (as Bridge gives every adapter), a fork's side process keeps its
// SQLite databases in a folder of its own under it, runs in the idle
// scheduling class, is kept for the next fork, and once idle for
// Config.SpareIdle is stopped and its folder removed; the next fork starts
// a new one.
func TestE2EForkSideProcessOwnsItsDatabasesAndGoesWhenIdle(t *testing.T) {
	env := newE2E(t)
	env.cfg.SpareIdle = 2 * time.Second
	ctx := ctxT(t)
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(ctx) })
	env.model.Enqueue(fakemodel.Reply{Text: "LIVE-ONE noted"})
	if _, err := l.Prompt(ctx, text("remember the word PELICAN-7")); err != nil {
		t.Fatal(err)
	}
	fork := func(a string) *proc {
		t.Helper()
		fk, err := l.(core.Forker).Fork(ctx)
		if err != nil {
			t.Fatal(err)
		}
		env.model.Enqueue(fakemodel.Reply{Text: a})
		if r, err := fk.Ask(ctx, "FORK-ASK what was the word?"); err != nil || !strings.Contains(r.Text, a) {
			t.Fatalf("fork reply %q, %v", r.Text, err)
		}
		p := fk.(*fork).side.p
		if err := fk.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := fork("FORK-REPLY-ONE")
	dbs, _ := filepath.Glob(filepath.Join(env.cfg.StateDir, sideDBPrefix+"*", "state_*.sqlite"))
	if len(dbs) != 1 {
		t.Fatalf("state databases under the state folder: %v, want the side process's one", dbs)
	}
	if first.exited() {
		t.Fatal("the side process stopped at once; it should be kept for the next fork")
	}
	adaptertest.GroupIsIdleClass(t, "side", first.Cmd.Process.Pid)
	select {
	case <-first.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the idle side process still runs 2 minutes after its fork (SpareIdle 2 s)")
	}
	l.(*live).mu.Lock()
	kept := l.(*live).spare
	l.(*live).mu.Unlock()
	if kept != nil {
		t.Error("the session still holds the stopped side process as its spare")
	}
	for i := 0; ; i++ {
		if left, _ := filepath.Glob(filepath.Join(env.cfg.StateDir, sideDBPrefix+"*")); len(left) == 0 {
			break
		} else if i == 100 {
			t.Fatalf("the stopped side process's database folder is left: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if second := fork("FORK-REPLY-TWO"); second == first {
		t.Error("the fork after the idle stop ran on the stopped process")
	}
}

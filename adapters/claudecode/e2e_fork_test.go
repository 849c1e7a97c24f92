package claudecode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestE2EFork: a fork of a live Claude Code session is a side process that
// carries the conversation so far, answers with its token usage, leaves no
// transcript, and leaves the live session's next request free of what was
// asked of the fork.
func TestE2EFork(t *testing.T) {
	t.Parallel()
	env := newE2E(t)
	ctx := testCtx(t)
	h := New(env.cfg)
	if c := h.Probe(ctx); !c.Has(core.CapSessionFork) {
		t.Fatalf("probe: session.fork not available: %+v", c.Capabilities)
	}
	var col collector
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, col.sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	env.fake.Enqueue(fakemodel.Reply{Text: "LIVE-ONE noted"})
	if _, err := l.Prompt(ctx, text("remember the word PELICAN-7")); err != nil {
		t.Fatal(err)
	}
	fk, err := l.(core.Forker).Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.fake.Enqueue(fakemodel.Reply{Text: `{"summary":"FORK-REPLY"}`, InputTokens: 1234})
	r, err := fk.Ask(ctx, "FORK-ASK what was the word?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "FORK-REPLY") {
		t.Errorf("fork reply %q", r.Text)
	}
	if r.Usage == nil || r.Usage.InputTokens+r.Usage.CacheReadTokens+r.Usage.CacheCreationTokens == 0 {
		t.Errorf("fork usage %+v", r.Usage)
	}
	rs := env.fake.Requests()
	last := rs[len(rs)-1]
	if !strings.Contains(string(last.Body), "PELICAN-7") || !strings.Contains(last.LastUserText, "FORK-ASK") {
		t.Errorf("the fork's request did not carry the conversation: %s", last.LastUserText)
	}
	if err := fk.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The fork stored nothing: one transcript, the live session's.
	var transcripts []string
	filepath.Walk(filepath.Join(env.cfg.ConfigDir, "projects"), func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") && !strings.Contains(p, "subagents") {
			transcripts = append(transcripts, filepath.Base(p))
		}
		return nil
	})
	if len(transcripts) != 1 || transcripts[0] != l.NativeID()+".jsonl" {
		t.Errorf("transcripts after the fork: %v, want only %s.jsonl", transcripts, l.NativeID())
	}
	env.fake.Enqueue(fakemodel.Reply{Text: "LIVE-TWO"})
	if _, err := l.Prompt(ctx, text("and now?")); err != nil {
		t.Fatal(err)
	}
	rs = env.fake.Requests()
	last = rs[len(rs)-1]
	body := string(last.Body)
	if strings.Contains(body, "FORK-ASK") || strings.Contains(body, "FORK-REPLY") {
		t.Errorf("the live session's next request carries the fork's exchange")
	}
	if !strings.Contains(body, "PELICAN-7") || !strings.Contains(body, "LIVE-ONE") {
		t.Errorf("the live session's next request lost the turn before")
	}
	for _, e := range col.entries(core.KindAssistantMessage) {
		if strings.Contains(string(e.Payload), "FORK-REPLY") {
			t.Errorf("the fork's reply reached the live session's sink")
		}
	}
}

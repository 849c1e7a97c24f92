package main

import (
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestE2EForkClaudeToCodex forks a real Claude Code session at an earlier
// entry into real Codex: the first request Codex sends to the fake model
// carries the conversation up to that entry and nothing after it, the fork
// records its origin, and the source's record is not changed.
func TestE2EForkClaudeToCodex(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{})
	h.onText("Forked conversation", "Ready to carry on.")
	h.onText("ALPHA-ONE", "Noted ALPHA-REPLY.")
	h.onText("BRAVO-TWO", "Noted BRAVO-REPLY.")
	h.onText("CHARLIE-THREE", "Noted CHARLIE-REPLY.")
	c := h.start(t)
	src := h.create(t, c, "claude-code", "fork source")
	say(t, c, src, "Remember the code word ALPHA-ONE.")
	say(t, c, src, "And the second code word BRAVO-TWO.")
	say(t, c, src, "And the third code word CHARLIE-THREE.")

	hist := rpctest.Must(c.Client, c.SessionHistory, schema.SessionHistoryParams{SessionID: src, MaxMessages: 100})
	// The fork point: the last entry before the third user message.
	at := ""
	for i, e := range hist.Entries {
		if e.Kind == "user.message" && strings.Contains(string(e.Payload), "CHARLIE-THREE") {
			at = hist.Entries[i-1].ID
		}
	}
	if at == "" {
		t.Fatalf("no entry before the third message in %d entries", len(hist.Entries))
	}
	db := h.openDB(t)
	n0, sum0 := recordDigest(t, db, src)

	before := len(h.fake.Requests())
	res := rpctest.Must(c.Client, c.SessionFork, schema.SessionForkParams{SessionID: src, EntryID: at, Target: schema.MigrationTarget{Harness: "codex"}})
	if res.SessionID == "" || res.SessionID == src || res.Harness != "codex" || res.Origin.SessionID != src ||
		res.Origin.EntryID != at || res.Origin.Harness != "claude-code" || res.ProjectedEntries < 4 {
		t.Fatalf("session/fork = %+v", res)
	}
	reqs := h.requestsSince(before)
	var first string
	for _, r := range reqs {
		if r.API == "responses" {
			first = requestText(r)
			break
		}
	}
	if first == "" {
		t.Fatalf("Codex sent no request to the model (%d requests since the fork)", len(reqs))
	}
	for _, want := range []string{"ALPHA-ONE", "ALPHA-REPLY", "BRAVO-TWO", "BRAVO-REPLY", src} {
		if !strings.Contains(first, want) {
			t.Errorf("Codex's first request lacks %q", want)
		}
	}
	for _, after := range []string{"CHARLIE-THREE", "CHARLIE-REPLY"} {
		if strings.Contains(first, after) {
			t.Errorf("Codex's first request carries %q, which came after the fork point", after)
		}
	}
	if n1, sum1 := recordDigest(t, db, src); n1 != n0 || sum1 != sum0 {
		t.Fatalf("the source changed: %d entries (was %d)", n1, n0)
	}
	fh := rpctest.Must(c.Client, c.SessionHistory, schema.SessionHistoryParams{SessionID: res.SessionID, MaxMessages: 100})
	var origin *core.SessionForkedPayload
	for _, e := range fh.Entries {
		if e.Kind == "user.message" && origin == nil {
			t.Fatalf("the fork's first message came before its session.forked entry")
		}
		if e.Kind == "session.forked" {
			p := payloadAs[core.SessionForkedPayload](t, e)
			origin = &p
			break
		}
	}
	if origin == nil || origin.SourceSessionID != src || origin.SourceEntryID != at {
		t.Fatalf("origin %v", origin)
	}
	// The fork's first turn ends with the target's answer (its usage, where
	// the harness reports one, is recorded after it).
	last := fh.Entries[len(fh.Entries)-1]
	for i := len(fh.Entries) - 1; i > 0 && last.Kind == "usage.reported"; i-- {
		last = fh.Entries[i-1]
	}
	if last.Kind != "assistant.message" || !strings.Contains(string(last.Payload), "Ready to carry on") {
		t.Fatalf("the fork did not run its first turn: last entry %s %s", last.Kind, last.Payload)
	}
	// Forking at an entry of another session, or one that does not exist, is refused.
	if e := rpctest.ErrorOf(c.SessionFork(t.Context(), schema.SessionForkParams{SessionID: res.SessionID, EntryID: at, Target: schema.MigrationTarget{}})); e == nil || e.Code != -32602 {
		t.Fatalf("entry of another session: %+v", e)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

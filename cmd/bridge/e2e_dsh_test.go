package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestE2EDSH drives the real DeepSeek Harness through the bridge binary:
// doctor, a turn, /compact (one session/contextCompacted carrying DSH's
// shadowedTokenCount), then, with both DSH and bridge restarted, a native
// resume whose next turn still carries the compacted conversation, and the
// session log DSH wrote imported with `bridge import`.
func TestE2EDSH(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{DSH: true})
	h.onText("compaction engine", "SUMMARY-55837: the user wants port 55837 in internal/server/listen.go.")
	h.onText("port 55837", "Noted, port 55837.")
	h.onText("what port", "Port 55837, as you said.")

	c := h.start(t)
	var doc struct {
		Adapters []struct {
			Harness string   `json:"harness"`
			OK      bool     `json:"ok"`
			Version string   `json:"version"`
			Missing []string `json:"missing"`
		} `json:"adapters"`
	}
	c.mustCall("bridge/doctor", map[string]any{"harness": "dsh"}, &doc)
	if len(doc.Adapters) != 1 || !doc.Adapters[0].OK || doc.Adapters[0].Version == "" {
		t.Fatalf("bridge/doctor dsh = %+v", doc)
	}

	sid := h.create(t, c, "dsh", "port")
	say(t, c, sid, "The server must listen on port 55837; the listener is in internal/server/listen.go.")
	var cr struct {
		By      string `json:"by"`
		EntryID string `json:"entryId"`
	}
	c.mustCall("session/compact", map[string]any{"sessionId": sid}, &cr)
	if cr.By != "harness" {
		t.Fatalf("session/compact = %+v, want by harness", cr)
	}
	var note struct {
		SessionID string `json:"sessionId"`
		Trigger   string `json:"trigger"`
		Harness   string `json:"harness"`
		PreTokens int64  `json:"preTokens"`
	}
	c.awaitNote("session/contextCompacted", func(m wireMsg) bool {
		return m.Method == "session/contextCompacted" && json.Unmarshal(m.Params, &note) == nil && note.SessionID == sid
	})
	if note.Harness != "dsh" || note.Trigger != "manual" || note.PreTokens <= 0 {
		t.Errorf("session/contextCompacted = %+v, want dsh, manual, preTokens from shadowedTokenCount", note)
	}
	if n := len(c.notesOf("session/contextCompacted")); n != 1 {
		t.Errorf("%d session/contextCompacted notifications, want 1", n)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("bridge exit code %d", code)
	}

	// DSH restarts (same DSH_HOME, same port); a new bridge resumes the
	// session natively, and its next turn carries the compacted summary.
	h.dsh.Restart()
	db := h.openDB(t)
	native := sessionNative(t, db, sid)
	c = h.start(t)
	res, rn := resume(t, c, sid)
	if res.Mode != "native" || rn.Mode != "native" || res.NativeError != "" {
		t.Fatalf("session/resume after a DSH restart = %+v (note %+v), want native", res, rn)
	}
	before := len(h.fake.Requests())
	say(t, c, sid, "Remind me: what port?")
	var turn []string
	for _, r := range h.requestsSince(before) {
		if strings.Contains(r.LastUserText, "what port") {
			turn = append(turn, requestText(r))
		}
	}
	if len(turn) != 1 || !strings.Contains(turn[0], "SUMMARY-55837") {
		t.Errorf("the resumed turn's request (%d found) does not carry the compacted summary", len(turn))
	}
	if got := sessionNative(t, db, sid); got != native {
		t.Errorf("native id after resume %q, want %q", got, native)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("bridge exit code %d", code)
	}

	// The durable log DSH wrote (flushed when it stops) imports into a
	// fresh data directory with its compaction, once.
	h.dsh.Stop()
	log := h.dsh.SessionLog(h.cwd, native)
	dir := t.TempDir()
	var first, second struct {
		SessionID        string `json:"sessionId"`
		Entries          int    `json:"entries"`
		ContextCompacted int    `json:"contextCompacted"`
	}
	for i, out := range []any{&first, &second} {
		stdout, stderr, code := runCLI(t, nil, "--data-dir", dir, "import", "--harness", "dsh", log, "--json")
		if code != 0 {
			t.Fatalf("bridge import %d: exit %d: %s", i+1, code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), out); err != nil {
			t.Fatalf("bridge import %d: %v: %s", i+1, err, stdout)
		}
	}
	if first.Entries < 4 || first.ContextCompacted != 1 {
		t.Errorf("bridge import of %s = %+v, want the turns and one context.compacted", log, first)
	}
	if second.SessionID != first.SessionID || second.Entries != 0 {
		t.Errorf("second import %+v, want the same session and nothing added", second)
	}
}

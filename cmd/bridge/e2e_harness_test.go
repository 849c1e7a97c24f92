package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// These tests drive the real Claude Code program through the bridge binary
// against the fake model server: checkpoints (ARCHITECTURE.md, Checkpoints) and restoration
// from them (ARCHITECTURE.md, Restoration).

// checkpointMarker is the request text the fake model recognises as
// Bridge's checkpoint request.
const checkpointMarker = "Bridge checkpoint request"

// checkpointJSON is a checkpoint reply object with summary s.
func checkpointJSON(s string) string {
	b, _ := json.Marshal(map[string]any{
		"summary":      s,
		"decisions":    []string{"Listen on port 55837 because the user asked for it"},
		"filesTouched": []string{"internal/server/listen.go"},
		"openWork":     []string{"Change the port in internal/server/listen.go"},
	})
	return string(b)
}

// inProse wraps a JSON object in the preamble and fence a model adds.
func inProse(obj string) string {
	return "Sure, here is the checkpoint you asked for.\n\n```json\n" + obj + "\n```\n\nLet me know if anything is missing."
}

// awaitCheckpointSaved waits for the session/checkpointSaved of entryID.
func awaitCheckpointSaved(t *testing.T, c *client, entryID string) schema.CheckpointSavedNotification {
	t.Helper()
	return rpctest.Await(c.Client, schema.NoticeCheckpointSaved, func(n schema.CheckpointSavedNotification) bool { return n.EntryID == entryID })
}

// checkCommit checks that the record ends with the commit of checkpoint
// cpID (checkpoint, compaction boundary, branch.summary marker) with
// summary, and that the session head and the audit log agree. It returns
// the entries after the previous commit (or from the root), up to and
// excluding the checkpoint entry.
func checkCommit(t *testing.T, h *harnessEnv, c *client, sid string, res schema.SessionCheckpointResult, summary string) []schema.Entry {
	t.Helper()
	es := history(t, c, sid)
	n := len(es)
	t.Logf("record of %s: %v", sid, kinds(es))
	if n < 4 {
		t.Fatalf("record of %s: %v", sid, kinds(es))
	}
	tail := kinds(es[n-3:])
	if strings.Join(tail, " ") != "checkpoint compaction branch.summary" {
		t.Fatalf("record ends with %v, want checkpoint, compaction, branch.summary (whole record %v)", tail, kinds(es))
	}
	cp, boundary, marker := es[n-3], es[n-2], es[n-1]
	if cp.ID != res.EntryID {
		t.Errorf("session/checkpoint entryId %s, but the checkpoint entry is %s", res.EntryID, cp.ID)
	}
	p := payloadOf(t, cp)
	if p["summary"] != summary || p["sourceAgent"] != sid || p["reason"] != "manual" || p["provenance"] != string(res.Provenance) ||
		p["schemaVersion"] != float64(1) || p["firstRetainedEntryId"] == "" {
		t.Errorf("checkpoint payload %s", cp.Payload)
	}
	if !strings.Contains(string(cp.Payload), "internal/server/listen.go") || !strings.Contains(string(cp.Payload), "port 55837") {
		t.Errorf("checkpoint lost the reply's files or decisions: %s", cp.Payload)
	}
	if bp := payloadOf(t, boundary); bp["checkpointEntryId"] != cp.ID || bp["summary"] != summary {
		t.Errorf("compaction boundary %s does not commit checkpoint %s", boundary.Payload, cp.ID)
	}
	if mp := payloadOf(t, marker); mp["checkpointEntryId"] != cp.ID {
		t.Errorf("branch.summary %s does not name checkpoint %s", marker.Payload, cp.ID)
	}
	db := h.openDB(t)
	sess, err := db.GetSession(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if sess.LatestCheckpointID != cp.ID || sess.HeadID != marker.ID {
		t.Errorf("session head: latest checkpoint %q head %q, want %q and %q", sess.LatestCheckpointID, sess.HeadID, cp.ID, marker.ID)
	}
	var found bool
	for _, a := range audit(t, db, sid, "checkpoint.evidence_verified") {
		var body struct {
			Provenance        string `json:"provenance"`
			AppendedDecisions int    `json:"appendedDecisions"`
			AppendedFiles     int    `json:"appendedFiles"`
		}
		if err := json.Unmarshal(a.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Provenance != string(res.Provenance) {
			continue
		}
		found = true
		want := "agent"
		if body.AppendedDecisions+body.AppendedFiles > 0 {
			want = "agent+controller"
		}
		if string(res.Provenance) != want {
			t.Errorf("provenance %q, but the audit says %d decisions and %d files were appended", res.Provenance, body.AppendedDecisions, body.AppendedFiles)
		}
	}
	if !found {
		t.Errorf("no checkpoint.evidence_verified audit row with provenance %q for %s", res.Provenance, sid)
	}
	// The entries of this checkpoint request: after the previous marker.
	start := 0
	for i := n - 4; i >= 0; i-- {
		if es[i].Kind == "branch.summary" {
			start = i + 1
			break
		}
	}
	return es[start : n-3]
}

// requestAttempts returns the attempts of the compaction.requested entries.
func requestAttempts(t *testing.T, es []schema.Entry) []int {
	t.Helper()
	var out []int
	for _, e := range es {
		if e.Kind == "compaction.requested" {
			out = append(out, int(payloadOf(t, e)["attempt"].(float64)))
		}
	}
	return out
}

// TestE2EClaudeCheckpoint: a checkpoint of a live Claude Code session is
// written by the session's own agent; a reply with no JSON object gets one
// repair prompt in the same session. On both stores: the real harness's
// checkpoint commit on PostgreSQL too.
func TestE2EClaudeCheckpoint(t *testing.T) {
	t.Parallel()
	eachStore(t, testE2EClaudeCheckpoint)
}

func testE2EClaudeCheckpoint(t *testing.T, st storeKind) {
	h := newHarnessEnv(t, harnessOptions{Store: st})
	var asked atomic.Int32
	h.on(checkpointMarker, func(fakemodel.Request) fakemodel.Reply {
		if asked.Add(1) == 1 {
			return fakemodel.Reply{Text: inProse(checkpointJSON("CKPT-ONE: moving the server to port 55837"))}
		}
		return fakemodel.Reply{Text: "The checkpoint is done, everything is saved."}
	})
	h.onText("could not be used", inProse(checkpointJSON("CKPT-TWO: port 55837 set in the plan, tests next")))
	h.onText("port 55837", "Understood: the server will listen on port 55837 (internal/server/listen.go).")
	c := h.start(t)
	sid := h.create(t, c, "claude-code", "checkpoints")
	say(t, c, sid, "The server must listen on port 55837; the listener is in internal/server/listen.go.")

	res := rpctest.Must(c.Client, c.SessionCheckpoint, schema.SessionCheckpointParams{SessionID: sid, Reason: "manual"})
	if res.EntryID == "" || res.Reason != "manual" || (res.Provenance != "agent" && res.Provenance != "agent+controller") {
		t.Fatalf("session/checkpoint = %+v", res)
	}
	note := awaitCheckpointSaved(t, c, res.EntryID)
	if note.SessionID != sid || !note.Hot || note.Provenance != res.Provenance || note.Reason != "manual" {
		t.Errorf("session/checkpointSaved = %+v, want hot for %s with provenance %s", note, sid, res.Provenance)
	}
	own := checkCommit(t, h, c, sid, res, "CKPT-ONE: moving the server to port 55837")
	if got := requestAttempts(t, own); len(got) != 1 || got[0] != 0 {
		t.Errorf("compaction.requested attempts %v, want [0]", got)
	}
	// The session's own agent wrote it: the request went into the same
	// Claude Code conversation that holds the earlier turn.
	var ckptReq []fakemodel.Request
	for _, r := range h.fake.Requests() {
		if strings.Contains(r.LastUserText, checkpointMarker) {
			ckptReq = append(ckptReq, r)
		}
	}
	if len(ckptReq) != 1 || ckptReq[0].API != "anthropic" || !strings.Contains(requestText(ckptReq[0]), "listen on port 55837") {
		t.Fatalf("checkpoint requests to the model: %d; want one anthropic request carrying the session's conversation", len(ckptReq))
	}

	// Garbage first: one repair prompt, then success.
	say(t, c, sid, "Keep port 55837 but also add a health check.")
	res2 := rpctest.Must(c.Client, c.SessionCheckpoint, schema.SessionCheckpointParams{SessionID: sid})
	if res2.EntryID == "" || res2.EntryID == res.EntryID {
		t.Fatalf("second checkpoint = %+v", res2)
	}
	if n := awaitCheckpointSaved(t, c, res2.EntryID); !n.Hot || n.SessionID != sid {
		t.Errorf("second session/checkpointSaved = %+v", n)
	}
	own = checkCommit(t, h, c, sid, res2, "CKPT-TWO: port 55837 set in the plan, tests next")
	if got := requestAttempts(t, own); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("compaction.requested attempts %v, want [0 1] (kinds %v)", got, kinds(own))
	}
	for _, e := range own {
		if e.Kind == "compaction.requested" && payloadOf(t, e)["attempt"] == float64(1) {
			if rep, _ := payloadOf(t, e)["repairOf"].(string); !strings.Contains(rep, "no JSON object") {
				t.Errorf("repair request says repairOf %q, want the problem named", rep)
			}
		}
		if e.Kind == "compaction.failed" {
			t.Errorf("compaction.failed recorded although the repair succeeded: %s", e.Payload)
		}
	}
	var repair *fakemodel.Request
	for _, r := range h.fake.Requests() {
		if strings.Contains(r.LastUserText, "could not be used") {
			r := r
			repair = &r
		}
	}
	if repair == nil || !strings.Contains(requestText(*repair), "The checkpoint is done, everything is saved.") {
		t.Errorf("the repair prompt did not go to the same conversation as the unusable reply")
	}
	if n := len(c.Sent("session/checkpointSaved")); n != 2 {
		t.Errorf("%d session/checkpointSaved notifications, want 2", n)
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

// TestE2EClaudeCheckpointTimeout: a checkpoint reply that never comes ends
// in compaction.failed (entry and audit row) and a timeout error, and the
// session carries on. The limit is the product's default, 30 s: the test
// waits it out once, and the checkpoint that follows must be answered
// within it, which at load 24 a 4 s limit did not always allow.
func TestE2EClaudeCheckpointTimeout(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{CheckpointTimeoutSeconds: 30})
	var hang atomic.Bool
	hang.Store(true)
	h.on(checkpointMarker, func(fakemodel.Request) fakemodel.Reply {
		if hang.Load() {
			return fakemodel.Reply{Hang: true}
		}
		return fakemodel.Reply{Text: inProse(checkpointJSON("CKPT-AFTER-TIMEOUT: port 55837"))}
	})
	c := h.start(t)
	sid := h.create(t, c, "claude-code", "timeout")
	say(t, c, sid, "The server must listen on port 55837.")

	e := rpctest.ErrorOf(c.SessionCheckpoint(t.Context(), schema.SessionCheckpointParams{SessionID: sid, Reason: "manual"}))
	if e == nil || e.DataCode() != "timeout" {
		t.Fatalf("session/checkpoint with no reply: %+v, want data.code timeout", e)
	}
	es := history(t, c, sid)
	var failed []schema.Entry
	for _, x := range es {
		switch x.Kind {
		case "compaction.failed":
			failed = append(failed, x)
		case "checkpoint", "compaction", "branch.summary":
			t.Errorf("%s entry recorded for a checkpoint that failed", x.Kind)
		}
	}
	if got := requestAttempts(t, es); len(got) != 1 || got[0] != 0 {
		t.Errorf("compaction.requested attempts %v, want [0] (no repair prompt for a reply that never came)", got)
	}
	if len(failed) != 1 {
		t.Fatalf("compaction.failed entries: %d (record %v)", len(failed), kinds(es))
	}
	if p := payloadOf(t, failed[0]); p["reason"] != "manual" || p["attempt"] != float64(0) || p["error"] == "" {
		t.Errorf("compaction.failed payload %s", failed[0].Payload)
	}
	db := h.openDB(t)
	rows := audit(t, db, sid, "compaction.failed")
	if len(rows) != 1 || !strings.Contains(string(rows[0].Body), `"code":"timeout"`) {
		t.Errorf("compaction.failed audit rows %+v, want one with code timeout", rows)
	}
	if n := len(c.Sent("session/checkpointSaved")); n != 0 {
		t.Errorf("%d session/checkpointSaved notifications for a failed checkpoint", n)
	}

	// The failed request does not block the session: a turn and a new
	// checkpoint both work.
	hang.Store(false)
	say(t, c, sid, "Are you still there? The port stays 55837.")
	res := rpctest.Must(c.Client, c.SessionCheckpoint, schema.SessionCheckpointParams{SessionID: sid})
	awaitCheckpointSaved(t, c, res.EntryID)
	checkCommit(t, h, c, sid, res, "CKPT-AFTER-TIMEOUT: port 55837")
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

// resume calls session/resume and returns its result and the matching
// session/restored notification.
func resume(t *testing.T, c *client, sid string) (schema.SessionResumeResult, schema.SessionResumeResult) {
	t.Helper()
	res := rpctest.Must(c.Client, c.SessionResume, schema.SessionResumeParams{SessionID: sid})
	note := rpctest.Await(c.Client, schema.NoticeRestored, func(n schema.RestoredNotification) bool { return n.SessionID == sid })
	return res, schema.SessionResumeResult(note)
}

// TestE2EClaudeRestore: a session comes back natively while Claude Code
// still has its transcript, and from the Bridge checkpoint when it does
// not, each time in a new bridge process.
func TestE2EClaudeRestore(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{Config: onShutdown})
	const summary = "CKPT-RESTORE-4242: the server moves to port 55837 in internal/server/listen.go"
	h.onText(checkpointMarker, inProse(checkpointJSON(summary)))
	h.onText("port 55837", "Noted, port 55837.")

	c := h.start(t)
	sid := h.create(t, c, "claude-code", "restore")
	say(t, c, sid, "The server must listen on port 55837; the listener is in internal/server/listen.go.")
	cp := rpctest.Must(c.Client, c.SessionCheckpoint, schema.SessionCheckpointParams{SessionID: sid})
	awaitCheckpointSaved(t, c, cp.EntryID)
	if code := c.exit(true); code != 0 {
		t.Fatalf("bridge exit code %d", code)
	}

	// A new bridge process, the transcript still there: native.
	db := h.openDB(t)
	native := sessionNative(t, db, sid)
	before := len(h.fake.Requests())
	c = h.start(t)
	res, note := resume(t, c, sid)
	if res.Mode != "native" || res.NativeError != "" || res.CheckpointEntryID != "" {
		t.Fatalf("session/resume with the transcript = %+v, want native", res)
	}
	if note.Mode != "native" {
		t.Errorf("session/restored = %+v, want native", note)
	}
	if n := len(h.requestsSince(before)); n != 0 {
		t.Errorf("a native resume called the model %d times", n)
	}
	h.onText("what port", "Port 55837, as you said.")
	say(t, c, sid, "Remind me: what port?")
	rs := h.requestsSince(before)
	if len(rs) == 0 || !strings.Contains(requestText(rs[len(rs)-1]), "listen on port 55837") {
		t.Errorf("the natively resumed turn did not carry the earlier conversation")
	}
	if got := sessionNative(t, db, sid); got != native {
		t.Errorf("native session id after a native resume %q, want %q", got, native)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("bridge exit code %d", code)
	}
	// That turn was new work: the shutdown wrote a before_shutdown
	// checkpoint, the newest one to restore from.
	if notes, _ := savedNotes(c, sid, "before_shutdown"); len(notes) != 1 {
		t.Fatalf("before_shutdown notifications %+v, want one", notes)
	} else {
		cp.EntryID = notes[0].EntryID
	}

	// Claude Code loses its transcript; the next bridge process restores
	// from the checkpoint.
	transcript := h.findTranscript(t, native)
	if err := os.Remove(transcript); err != nil {
		t.Fatal(err)
	}
	before = len(h.fake.Requests())
	c = h.start(t)
	res, note = resume(t, c, sid)
	if res.Mode != "checkpoint_restored" || res.CheckpointEntryID != cp.EntryID {
		t.Fatalf("session/resume without the transcript = %+v, want checkpoint_restored from %s", res, cp.EntryID)
	}
	if want := "No conversation found with session ID: " + native; !strings.Contains(res.NativeError, want) {
		t.Errorf("nativeError %q, want Claude Code's own %q", res.NativeError, want)
	}
	if res.SessionID == "" {
		res.SessionID = sid // the result does not repeat the session id
	}
	if note != res {
		t.Errorf("session/restored %+v differs from the session/resume result %+v", note, res)
	}
	es := history(t, c, sid)
	failedAt, restoredAt := -1, -1
	for i, e := range es {
		switch e.Kind {
		case "session.resume_failed":
			failedAt = i
			if p := payloadOf(t, e); !strings.Contains(p["error"].(string), native) || p["nativeId"] != native {
				t.Errorf("session.resume_failed payload %s", e.Payload)
			}
		case "session.restored":
			if p := payloadOf(t, e); p["mode"] == "checkpoint_restored" {
				restoredAt = i
				if p["checkpointEntryId"] != cp.EntryID {
					t.Errorf("session.restored payload %s", e.Payload)
				}
			}
		}
	}
	if failedAt < 0 || restoredAt < 0 || failedAt > restoredAt || es[failedAt].Seq >= es[restoredAt].Seq {
		t.Fatalf("session.resume_failed at %d, session.restored (checkpoint_restored) at %d: the failure must be recorded first (%v)",
			failedAt, restoredAt, kinds(es))
	}
	rs = h.requestsSince(before)
	if len(rs) == 0 {
		t.Fatal("the fresh Claude Code process never called the model")
	}
	if rs[0].API != "anthropic" || !strings.Contains(requestText(rs[0]), summary) {
		t.Errorf("the fresh process's first model request lacks the checkpoint summary:\n%.2000s", requestText(rs[0]))
	}
	if got := sessionNative(t, db, sid); got == native {
		t.Errorf("after checkpoint restoration the session still names the lost native session %s", native)
	}
	// The restored process knows the checkpoint on the next turn.
	say(t, c, sid, "So, what port?")
	rs = h.requestsSince(before)
	if !strings.Contains(requestText(rs[len(rs)-1]), summary) {
		t.Errorf("the turn after restoration lost the injected checkpoint")
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

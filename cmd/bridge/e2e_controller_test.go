package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// These tests drive the real Claude Code (and Codex) through the bridge
// binary against the fake model server: checkpoints Bridge raises on its
// own, at a phase boundary, on shutdown (and SIGTERM), when a session is
// idle and before a risky native resume.

// savedNotes returns the session/checkpointSaved notifications of sid with
// reason, in arrival order, with their index among all notifications.
func savedNotes(c *client, sid, reason string) (notes []schema.CheckpointSavedNotification, at []int) {
	for i, m := range c.notes() {
		if m.Method != "session/checkpointSaved" {
			continue
		}
		var n schema.CheckpointSavedNotification
		if json.Unmarshal(m.Params, &n) == nil && n.SessionID == sid && string(n.Reason) == reason {
			notes = append(notes, n)
			at = append(at, i)
		}
	}
	return notes, at
}

// awaitSaved waits for a session/checkpointSaved of sid with reason.
func awaitSaved(t *testing.T, c *client, sid, reason string) schema.CheckpointSavedNotification {
	t.Helper()
	return rpctest.Await(c.Client, schema.NoticeCheckpointSaved, func(n schema.CheckpointSavedNotification) bool {
		return n.SessionID == sid && string(n.Reason) == reason
	})
}

// checkpointOf returns the payload of the checkpoint entry id in the record.
func checkpointOf(t *testing.T, c *client, sid, id string) checkpoint.Checkpoint {
	t.Helper()
	for _, e := range history(t, c, sid) {
		if e.ID == id {
			if e.Kind != "checkpoint" {
				t.Fatalf("entry %s is a %s", id, e.Kind)
			}
			return payloadAs[checkpoint.Checkpoint](t, e)
		}
	}
	t.Fatalf("checkpoint %s is not on the record of %s", id, sid)
	return checkpoint.Checkpoint{}
}

// TestE2EClaudePhaseBoundary: in one turn Claude Code creates a task and
// completes it with its plan tools (TaskCreate, TaskUpdate); the record
// holds plan.updated, and after the turn Bridge writes a phase_boundary
// checkpoint by the session's own agent.
func TestE2EClaudePhaseBoundary(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{})
	const summary = "PHASE-4711: the parser is written; tests are next"
	h.onText(checkpointMarker, inProse(checkpointJSON(summary)))
	var step atomic.Int32
	h.on("PLAN-STEP-TURN", func(fakemodel.Request) fakemodel.Reply {
		step.Store(1)
		return fakemodel.Reply{Text: "Tracking the work.", ToolCall: &fakemodel.ToolCall{ID: "toolu_plan_1", Name: "TaskCreate",
			Input: json.RawMessage(`{"subject":"Write the parser","description":"The parser for port 55837","activeForm":"Writing the parser"}`)}}
	})
	h.respondToPlanSteps(&step, "The parser is done; tests are next.")
	c := h.start(t)
	sid := h.create(t, c, "claude-code", "phase")
	say(t, c, sid, "PLAN-STEP-TURN: write the parser (port 55837, internal/server/listen.go), then track the plan.")
	n := awaitSaved(t, c, sid, "phase_boundary")
	if !n.Hot || (n.Provenance != "agent" && n.Provenance != "agent+controller") {
		t.Errorf("session/checkpointSaved %+v: want the session's own agent, hot", n)
	}
	es := history(t, c, sid)
	plan, turnEnd, req := -1, -1, -1
	var plans []string
	for i, e := range es {
		switch e.Kind {
		case "plan.updated":
			plan = i
			plans = append(plans, string(e.Payload))
		case "session.status":
			if payloadOf(t, e)["status"] == "turn_completed" && req < 0 {
				turnEnd = i
			}
		case "compaction.requested":
			if req < 0 {
				req = i
				if payloadOf(t, e)["reason"] != "phase_boundary" {
					t.Errorf("request %s", e.Payload)
				}
			}
		}
	}
	if len(plans) != 2 || !strings.Contains(plans[0], `"source":"TaskCreate"`) || !strings.Contains(plans[0], "Write the parser") ||
		!strings.Contains(plans[1], `"source":"TaskUpdate"`) || !strings.Contains(plans[1], `"id":"1"`) || !strings.Contains(plans[1], `"completed"`) {
		t.Errorf("plan.updated entries %v: want task 1 created, then completed", plans)
	}
	if plan < 0 || turnEnd < plan || req < turnEnd {
		t.Fatalf("plan.updated at %d, the turn's end at %d, the phase_boundary request at %d: want them in this order (%v)", plan, turnEnd, req, kinds(es))
	}
	if cp := checkpointOf(t, c, sid, n.EntryID); cp.Summary != summary || cp.Reason != "phase_boundary" {
		t.Errorf("checkpoint %v", cp)
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

// TestE2EClaudeShutdownCheckpoint: shutdown after a turn writes a
// before_shutdown checkpoint, told to the client before the shutdown reply;
// a new process that cannot resume natively (the transcript is gone)
// restores from it.
func TestE2EClaudeShutdownCheckpoint(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{Config: onShutdown})
	const summary = "SHUTDOWN-8080: the server moves to port 55837 in internal/server/listen.go"
	h.onText(checkpointMarker, inProse(checkpointJSON(summary)))
	h.onText("port 55837", "Noted, port 55837.")
	c := h.start(t)
	sid := h.create(t, c, "claude-code", "shutdown")
	say(t, c, sid, "The server must listen on port 55837; the listener is in internal/server/listen.go.")
	reply := c.Reply(c.Request("shutdown", nil))
	if reply.Error != nil {
		t.Fatalf("shutdown: %+v", reply.Error)
	}
	notes, at := savedNotes(c, sid, "before_shutdown")
	if len(notes) != 1 || at[0] >= reply.NotesBefore {
		t.Fatalf("before_shutdown notifications %+v at %v; the shutdown reply came after %d notifications: want one, before it", notes, at, reply.NotesBefore)
	}
	c.Notify("exit", nil)
	if code := waitExit(t, c); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	db := h.openDB(t)
	native := sessionNative(t, db, sid)
	if err := os.Remove(h.findTranscript(t, native)); err != nil {
		t.Fatal(err)
	}
	c = h.start(t)
	res, _ := resume(t, c, sid)
	if res.Mode != "checkpoint_restored" || res.CheckpointEntryID != notes[0].EntryID {
		t.Fatalf("session/resume = %+v, want checkpoint_restored from the before_shutdown checkpoint %s", res, notes[0].EntryID)
	}
	if cp := checkpointOf(t, c, sid, notes[0].EntryID); cp.Summary != summary || cp.Reason != "before_shutdown" {
		t.Errorf("checkpoint %v", cp)
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

// waitExit waits for the bridge process to end and returns its exit code.
// The bound only catches a process that never ends: after SIGTERM it writes
// the before_shutdown checkpoints first (harnessEnv's limit).
func waitExit(t *testing.T, c *client) int {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(replyWait):
		t.Fatalf("bridge did not exit; stderr:\n%s", c.stderr.String())
	}
	err := c.cmd.Wait()
	if err == nil {
		return 0
	}
	var code = -1
	fmt.Sscanf(strings.TrimPrefix(err.Error(), "exit status "), "%d", &code)
	return code
}

// TestE2EClaudeIdleSuspend: a Claude Code session idle for the configured
// time is checkpointed (before_suspend) and its process stopped; the record
// says suspended, and the next prompt brings it back natively.
func TestE2EClaudeIdleSuspend(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{Config: map[string]any{"suspendAfterMinutes": 0.04}})
	const summary = "IDLE-5150: port 55837 decided, listener next"
	h.onText(checkpointMarker, inProse(checkpointJSON(summary)))
	h.onText("port 55837", "Noted, port 55837.")
	h.onText("what port", "Port 55837, as you said.")
	c := h.start(t)
	sid := h.create(t, c, "claude-code", "idle")
	say(t, c, sid, "The server must listen on port 55837; the listener is in internal/server/listen.go.")
	n := awaitSaved(t, c, sid, "before_suspend")
	rpctest.Await(c.Client, schema.NoticeSessionUpdate, func(u schema.SessionUpdateNotification) bool {
		return u.SessionID == sid && strings.Contains(string(mustJSON(u)), `"suspended"`)
	})
	if cp := checkpointOf(t, c, sid, n.EntryID); cp.Summary != summary || cp.Reason != "before_suspend" {
		t.Errorf("checkpoint %v", cp)
	}
	before := len(h.fake.Requests())
	say(t, c, sid, "Remind me: what port?")
	note := rpctest.Await(c.Client, schema.NoticeRestored, func(n schema.RestoredNotification) bool { return n.SessionID == sid })
	if note.Mode != "native" {
		t.Errorf("session/restored %+v, want native", note)
	}
	rs := h.requestsSince(before)
	if len(rs) == 0 || !strings.Contains(requestText(rs[len(rs)-1]), "listen on port 55837") {
		t.Errorf("the turn after the suspension lost the conversation")
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

// TestE2EClaudeVersionChangeCheckpoint: when the claude program's version
// differs from the one that last ran the session, resume writes a
// before_native_resume checkpoint (rebuilt from the record) before the
// native attempt.
func TestE2EClaudeVersionChangeCheckpoint(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{Config: map[string]any{"checkpointOnShutdown": false}})
	h.onText("port 55837", "Noted, port 55837.")
	c := h.start(t)
	sid := h.create(t, c, "claude-code", "upgrade")
	say(t, c, sid, "The server must listen on port 55837; the listener is in internal/server/listen.go.")
	if code := c.exit(true); code != 0 {
		t.Fatalf("bridge exit code %d", code)
	}
	// The same program, reporting another version.
	wrapper := filepath.Join(t.TempDir(), "claude-upgraded")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo '9.9.9 (Claude Code)'; exit 0; fi\nexec %q \"$@\"\n", h.claudeBin)
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	hs := h.config["harnesses"].(map[string]any)
	cc := hs["claude-code"].(map[string]any)
	cc["command"] = wrapper
	h.writeConfig(t)

	c = h.start(t)
	res, _ := resume(t, c, sid)
	if res.Mode != "native" {
		t.Fatalf("session/resume = %+v, want native", res)
	}
	notes, at := savedNotes(c, sid, "before_native_resume")
	if len(notes) != 1 || notes[0].Provenance != "reconstructed" || notes[0].Hot {
		t.Fatalf("before_native_resume notifications %+v: want one, reconstructed", notes)
	}
	restoredAt := -1
	for i, m := range c.notes() {
		if m.Method == "session/restored" {
			restoredAt = i
		}
	}
	if restoredAt < at[0] {
		t.Errorf("the checkpoint (notification %d) must come before the restoration (%d)", at[0], restoredAt)
	}
	cp := checkpointOf(t, c, sid, notes[0].EntryID)
	if cp.Reason != "before_native_resume" || !strings.Contains(cp.Summary, "55837") {
		t.Errorf("checkpoint %v: want the rebuilt record", cp)
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

// TestE2EClaudeSIGTERM: SIGTERM mid-session takes the shutdown path: the
// before_shutdown checkpoint is written, the process exits 0 and says
// nothing on stderr at error level.
func TestE2EClaudeSIGTERM(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{Config: onShutdown})
	const summary = "SIGTERM-1999: port 55837 decided"
	h.onText(checkpointMarker, inProse(checkpointJSON(summary)))
	h.onText("port 55837", "Noted, port 55837.")
	c := h.start(t)
	sid := h.create(t, c, "claude-code", "sigterm")
	say(t, c, sid, "The server must listen on port 55837; the listener is in internal/server/listen.go.")
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, c); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; stderr:\n%s", code, c.stderr.String())
	}
	if s := c.stderr.String(); strings.Contains(s, "level=ERROR") || strings.Contains(strings.ToLower(s), "error:") {
		t.Errorf("stderr after SIGTERM has an error line:\n%s", s)
	}
	db := h.openDB(t)
	sess, err := db.GetSession(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if sess.LatestCheckpointID == "" {
		t.Fatal("SIGTERM wrote no before_shutdown checkpoint")
	}
	e, err := db.GetEntry(context.Background(), sess.LatestCheckpointID)
	if err != nil || !strings.Contains(string(e.Payload), `"reason":"before_shutdown"`) || !strings.Contains(string(e.Payload), summary) {
		t.Fatalf("latest checkpoint %s %v", e.Payload, err)
	}
}

// TestE2EClaudeEditEvidence: a file Claude Code writes with its Write tool
// becomes artifact.created, and the next checkpoint request names it as
// evidence the reply must account for.
func TestE2EClaudeEditEvidence(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{Config: map[string]any{
		"presets": []map[string]any{{"name": "writer", "harness": "claude-code", "permissionMode": "acceptEdits"}}}})
	file := filepath.Join(h.cwd, "listen.go")
	input, _ := json.Marshal(map[string]string{"file_path": file, "content": "package server\n\nconst Port = 55837\n"})
	var wrote atomic.Bool
	h.on("EVIDENCE-TURN", func(fakemodel.Request) fakemodel.Reply {
		if wrote.Swap(true) {
			return fakemodel.Reply{Text: "Written."}
		}
		return fakemodel.Reply{Text: "Writing it.", ToolCall: &fakemodel.ToolCall{ID: "toolu_write_1", Name: "Write", Input: input}}
	})
	h.fake.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		if rep, ok := h.respond(r); ok {
			return rep, true
		}
		if wrote.Load() {
			return fakemodel.Reply{Text: "Written."}, true
		}
		return fakemodel.Reply{}, false
	})
	h.onText(checkpointMarker, inProse(checkpointJSON("EVIDENCE-3: the port constant is written")))
	c := h.start(t)
	cs := rpctest.Must(c.Client, c.SessionCreate, schema.SessionCreateParams{Harness: "claude-code", Cwd: h.cwd, Title: "evidence", Preset: "writer"})
	sid := cs.SessionID
	say(t, c, sid, "EVIDENCE-TURN: write the port constant to listen.go.")
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), "55837") {
		t.Fatalf("Claude Code did not write %s: %v", file, err)
	}
	var art bool
	for _, e := range history(t, c, sid) {
		if e.Kind == "artifact.created" {
			p := payloadOf(t, e)
			art = art || (p["path"] == file && p["tool"] == "Write")
		}
	}
	if !art {
		t.Fatalf("no artifact.created for %s: %v", file, kinds(history(t, c, sid)))
	}
	res := rpctest.Must(c.Client, c.SessionCheckpoint, schema.SessionCheckpointParams{SessionID: sid})
	var req string
	for _, r := range h.fake.Requests() {
		if strings.Contains(r.LastUserText, checkpointMarker) {
			req = r.LastUserText
		}
	}
	if !strings.Contains(req, file) {
		t.Errorf("the checkpoint request does not name the written file as evidence:\n%s", req)
	}
	if cp := checkpointOf(t, c, sid, res.EntryID); !strings.Contains(fmt.Sprint(cp.FilesTouched), file) {
		t.Errorf("checkpoint filesTouched %v lacks %s", cp.FilesTouched, file)
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

// TestE2EClaudeSubAgentWorkerResult: a Claude Code sub-agent's (Agent
// tool) final result becomes worker.result. Claude Code 2.1.328 runs it in
// the background: the tool result only says it was launched, and the final
// report arrives in a system/task_notification.
func TestE2EClaudeSubAgentWorkerResult(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{})
	input, _ := json.Marshal(map[string]string{"description": "Review the listener", "prompt": "SUBAGENT-TASK: review internal/server/listen.go and report.", "subagent_type": "general-purpose"})
	var asked atomic.Bool
	h.on("SUBAGENT-TASK", func(fakemodel.Request) fakemodel.Reply {
		return fakemodel.Reply{Text: "SUBAGENT-RESULT-77: the listener is fine, nothing to change."}
	})
	h.on("WORKER-TURN", func(fakemodel.Request) fakemodel.Reply {
		if asked.Swap(true) {
			return fakemodel.Reply{Text: "The reviewer found nothing to change."}
		}
		return fakemodel.Reply{Text: "Asking a reviewer.", ToolCall: &fakemodel.ToolCall{ID: "toolu_agent_1", Name: "Agent", Input: input}}
	})
	c := h.start(t)
	sid := h.create(t, c, "claude-code", "worker")
	say(t, c, sid, "WORKER-TURN: have a sub-agent review the listener.")
	es := history(t, c, sid)
	var found, launched int
	for _, e := range es {
		if e.Kind == "worker.result" {
			p := payloadOf(t, e)
			if p["status"] == "completed" && strings.Contains(fmt.Sprint(p["result"]), "SUBAGENT-RESULT-77") && p["toolId"] == "toolu_agent_1" {
				found++
			}
			if strings.Contains(fmt.Sprint(p["result"]), "Async agent launched") {
				launched++
			}
		}
	}
	if found != 1 || launched != 0 {
		for _, e := range es {
			t.Logf("%s %s", e.Kind, e.Payload)
		}
		t.Fatalf("%d worker.result entries carry the sub-agent's final result (want 1), %d its launch notice (want 0)", found, launched)
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

// respondToPlanSteps answers the fake model's turns after a TaskCreate (step
// 1): the task is marked completed (a phase boundary), then the turn ends
// with done. Replies set with on/onText come first.
func (h *harnessEnv) respondToPlanSteps(step *atomic.Int32, done string) {
	h.fake.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		if rep, ok := h.respond(r); ok {
			return rep, true
		}
		switch step.Load() {
		case 1:
			step.Store(2)
			return fakemodel.Reply{Text: "Parser written.", ToolCall: &fakemodel.ToolCall{ID: "toolu_plan_2", Name: "TaskUpdate",
				Input: json.RawMessage(`{"taskId":"1","status":"completed"}`)}}, true
		case 2:
			step.Store(3)
			return fakemodel.Reply{Text: done}, true
		}
		return fakemodel.Reply{}, false
	})
}

package main

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// These tests hold Bridge to leaving the live conversation alone: a
// checkpoint is asked of a fork of the session, and nothing Bridge writes
// reaches a model request of the live thread (docs/checkpoints.md).

// plantedMarker is planted in every checkpoint request through the
// checkpointInstructions setting; replyMarker is in every checkpoint reply.
const (
	plantedMarker = "BRIDGE-WROTE-7Q"
	replyMarker   = "CKPT-REPLY-9Z"
)

// liveThreadConfig plants the marker, and gives the shutdown checkpoints
// (each a fork: a harness process start) time on a loaded machine.
var liveThreadConfig = map[string]any{
	"checkpointInstructions":    plantedMarker + ": a marker the tests look for.",
	"shutdownCheckpointSeconds": 180,
	"checkpointOnShutdown":      true,
}

// claudeSessionOf is the Claude Code session a model request belongs to
// (metadata.user_id carries it as JSON text).
func claudeSessionOf(r fakemodel.Request) string {
	var b struct {
		Metadata struct {
			UserID string `json:"user_id"`
		} `json:"metadata"`
	}
	if json.Unmarshal(r.Body, &b) != nil {
		return ""
	}
	var u struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(b.Metadata.UserID), &u) != nil {
		return ""
	}
	return u.SessionID
}

// codexThreadOf is the Codex thread a model request belongs to
// (client_metadata.thread_id).
func codexThreadOf(r fakemodel.Request) string {
	var b struct {
		Meta struct {
			ThreadID string `json:"thread_id"`
		} `json:"client_metadata"`
	}
	if json.Unmarshal(r.Body, &b) != nil {
		return ""
	}
	return b.Meta.ThreadID
}

// threadOf is the harness's own session or thread a model request belongs
// to: Claude Code's (directly or under an ACP agent) and Codex's requests
// name it; OpenCode's and DeepSeek Harness's chat requests do not ("").
func threadOf(r fakemodel.Request) string {
	switch r.API {
	case "anthropic":
		return claudeSessionOf(r)
	case "responses":
		return codexThreadOf(r)
	}
	return ""
}

// liveTurnPrefix starts the prompt of every live turn of the tests whose
// harness names no thread in its requests: there a request belongs to the
// live thread when its last user text is such a prompt (a fork's request
// ends with the checkpoint request instead).
const liveTurnPrefix = "TURN-"

// liveRequests splits the model requests into those of the live session
// native and the others (the forks').
func liveRequests(rs []fakemodel.Request, native string) (live, other []fakemodel.Request) {
	for _, r := range rs {
		id := threadOf(r)
		if id == native || (id == "" && strings.Contains(r.LastUserText, liveTurnPrefix)) {
			live = append(live, r)
		} else {
			other = append(other, r)
		}
	}
	return live, other
}

// checkLiveThreadClean fails when a request of the live thread carries
// text Bridge wrote (the planted marker, the request's own heading) or a
// checkpoint reply; it returns the live requests.
func checkLiveThreadClean(t *testing.T, h *harnessEnv, native string) []fakemodel.Request {
	t.Helper()
	live, _ := liveRequests(h.fake.Requests(), native)
	if len(live) == 0 {
		t.Fatalf("no model request of the live session %s", native)
	}
	for i, r := range live {
		txt := requestText(r)
		for _, m := range []string{plantedMarker, checkpointMarker, replyMarker} {
			if strings.Contains(txt, m) {
				t.Errorf("live request %d (last user text %.60q) carries %q, which Bridge wrote or asked for", i, r.LastUserText, m)
			}
		}
	}
	return live
}

// checkForkCheckpoint checks the checkpoint entry id: written by the
// agent, through a fork, with the fork's token usage.
func checkForkCheckpoint(t *testing.T, c *client, sid, id, reason string) {
	t.Helper()
	cp := checkpointOf(t, c, sid, id)
	if cp.Method != "fork" || string(cp.Reason) != reason || !strings.Contains(cp.Summary, replyMarker) ||
		(cp.Provenance != "agent" && cp.Provenance != "agent+controller") {
		t.Errorf("%s checkpoint %+v: want the agent's own, by a fork", reason, cp)
	}
	if cp.ForkUsage == nil { // its inputTokens checked by checkpointOf
		t.Errorf("%s checkpoint has no forkUsage: %v", reason, cp)
	}
}

// TestE2EClaudeCheckpointsLeaveLiveThread: a phase-boundary checkpoint, a
// manual one and a shutdown one of a real Claude Code session, each
// followed by a turn of the live thread (the last after a native resume in
// a new bridge process): every checkpoint is saved, agent-authored, with
// method fork; the live thread's next request still holds the turns before
// it; and no request of the live thread, ever, carries the checkpoint
// request (a marker planted in it), its heading or its reply.
func TestE2EClaudeCheckpointsLeaveLiveThread(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{Config: liveThreadConfig})
	h.onText(checkpointMarker, inProse(checkpointJSON(replyMarker+": the parser is written; port 55837")))
	var step atomic.Int32
	h.on("PLAN-STEP-TURN", func(fakemodel.Request) fakemodel.Reply {
		step.Store(1)
		return fakemodel.Reply{Text: "Tracking the work.", ToolCall: &fakemodel.ToolCall{ID: "toolu_plan_1", Name: "TaskCreate",
			Input: json.RawMessage(`{"subject":"Write the parser","description":"The parser","activeForm":"Writing the parser"}`)}}
	})
	h.onText("TURN-TWO", "TURN-TWO-ANSWER: port 55837 noted.")
	h.onText("TURN-THREE", "TURN-THREE-ANSWER: done.")
	h.onText("TURN-FOUR", "TURN-FOUR-ANSWER: back.")
	h.respondToPlanSteps(&step, "PLAN-DONE-ANSWER: the parser is done.")
	c := h.start(t)
	sid := h.create(t, c, "claude-code", "live thread")
	db := h.openDB(t)
	native := sessionNative(t, db, sid)

	// Phase boundary.
	say(t, c, sid, "PLAN-STEP-TURN: write the parser, then track the plan.")
	n := awaitSaved(t, c, sid, "phase_boundary")
	if n.Method != "fork" || !n.Hot {
		t.Errorf("phase_boundary session/checkpointSaved %+v: want fork, hot", n)
	}
	checkForkCheckpoint(t, c, sid, n.EntryID, "phase_boundary")
	say(t, c, sid, "TURN-TWO: the server listens on port 55837.")
	live := checkLiveThreadClean(t, h, native)
	if txt := requestText(live[len(live)-1]); !strings.Contains(txt, "PLAN-STEP-TURN") || !strings.Contains(txt, "PLAN-DONE-ANSWER") {
		t.Errorf("the live request after the phase_boundary checkpoint lost the turn before it")
	}

	// Manual.
	res := rpctest.Must(c.Client, c.SessionCheckpoint, schema.SessionCheckpointParams{SessionID: sid, Reason: "manual"})
	if res.Method != "fork" {
		t.Errorf("session/checkpoint = %+v, want method fork", res)
	}
	checkForkCheckpoint(t, c, sid, res.EntryID, "manual")
	say(t, c, sid, "TURN-THREE: add a health check.")
	live = checkLiveThreadClean(t, h, native)
	if txt := requestText(live[len(live)-1]); !strings.Contains(txt, "TURN-TWO-ANSWER") || !strings.Contains(txt, "PLAN-STEP-TURN") {
		t.Errorf("the live request after the manual checkpoint lost the turns before it")
	}

	// Shutdown, then a native resume in a new bridge process.
	shutdownThenResume(t, h, c, sid, native, "TURN-FOUR: are you back?", 3, "TURN-THREE-ANSWER", "TURN-TWO-ANSWER")
}

// shutdownThenResume shuts the bridge down (a before_shutdown checkpoint,
// by a fork), resumes sid natively in a new bridge process and runs turn:
// the live request holds each of kept and nothing Bridge wrote, and asked
// checkpoint requests in all went to forks.
func shutdownThenResume(t *testing.T, h *harnessEnv, c *client, sid, native, turn string, asked int, kept ...string) {
	t.Helper()
	reply := c.Reply(c.Request("shutdown", nil))
	if reply.Error != nil {
		t.Fatalf("shutdown: %+v", reply.Error)
	}
	notes, _ := savedNotes(c, sid, "before_shutdown")
	if len(notes) != 1 || notes[0].Method != "fork" {
		t.Fatalf("before_shutdown notifications %+v, want one by a fork", notes)
	}
	c.Notify("exit", nil)
	if code := waitExit(t, c); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	c = h.start(t)
	if r, _ := resume(t, c, sid); r.Mode != "native" {
		t.Fatalf("session/resume = %+v, want native", r)
	}
	checkForkCheckpoint(t, c, sid, notes[0].EntryID, "before_shutdown")
	say(t, c, sid, turn)
	live := checkLiveThreadClean(t, h, native)
	txt := requestText(live[len(live)-1])
	for _, k := range kept {
		if !strings.Contains(txt, k) {
			t.Errorf("the live request after the shutdown checkpoint and native resume lost %q", k)
		}
	}
	_, other := liveRequests(h.fake.Requests(), native)
	n := 0
	for _, r := range other {
		if strings.Contains(r.LastUserText, plantedMarker) {
			n++
		}
	}
	if n != asked {
		t.Errorf("%d checkpoint requests outside the live thread, want %d", n, asked)
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

// TestE2ECodexCheckpointsLeaveLiveThread: the same for real Codex: a
// phase-boundary checkpoint (Codex's update_plan tool, which Bridge turns
// on, completes a step), a manual one and a shutdown one, each followed by
// a turn of the live thread (the last after a native resume in a new
// bridge process).
func TestE2ECodexCheckpointsLeaveLiveThread(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{Config: liveThreadConfig})
	h.onText(checkpointMarker, inProse(checkpointJSON(replyMarker+": the parser is written; port 55837")))
	h.on("PLAN-STEP-TURN", codexPlanSteps)
	h.onText("TURN-ONE", "TURN-ONE-ANSWER: port 55837 noted.")
	h.onText("TURN-TWO", "TURN-TWO-ANSWER: done.")
	h.onText("TURN-THREE", "TURN-THREE-ANSWER: back.")
	c := h.start(t)
	sid := h.create(t, c, "codex", "live thread")
	db := h.openDB(t)
	native := sessionNative(t, db, sid)

	// Phase boundary: update_plan starts a step, then completes it.
	say(t, c, sid, "PLAN-STEP-TURN: write the parser, then track the plan.")
	n := awaitSaved(t, c, sid, "phase_boundary")
	if n.Method != "fork" || !n.Hot {
		t.Errorf("phase_boundary session/checkpointSaved %+v: want fork, hot", n)
	}
	checkForkCheckpoint(t, c, sid, n.EntryID, "phase_boundary")
	var plans []string
	for _, e := range history(t, c, sid) {
		if e.Kind == "plan.updated" {
			plans = append(plans, string(e.Payload))
		}
	}
	if len(plans) != 2 || !strings.Contains(plans[1], "Write the parser") || !strings.Contains(plans[1], `"completed"`) {
		t.Errorf("plan.updated entries %v: want the step started, then completed", plans)
	}
	say(t, c, sid, "TURN-ONE: the server listens on port 55837.")
	live := checkLiveThreadClean(t, h, native)
	if txt := requestText(live[len(live)-1]); !strings.Contains(txt, "PLAN-STEP-TURN") || !strings.Contains(txt, "PLAN-DONE-ANSWER") {
		t.Errorf("the live request after the phase_boundary checkpoint lost the turn before it")
	}

	// Manual.
	res := rpctest.Must(c.Client, c.SessionCheckpoint, schema.SessionCheckpointParams{SessionID: sid, Reason: "manual"})
	if res.Method != "fork" {
		t.Errorf("session/checkpoint = %+v, want method fork", res)
	}
	checkForkCheckpoint(t, c, sid, res.EntryID, "manual")
	say(t, c, sid, "TURN-TWO: add a health check.")
	live = checkLiveThreadClean(t, h, native)
	if txt := requestText(live[len(live)-1]); !strings.Contains(txt, "TURN-ONE-ANSWER") || !strings.Contains(txt, "PLAN-STEP-TURN") {
		t.Errorf("the live request after the manual checkpoint lost the turns before it")
	}

	shutdownThenResume(t, h, c, sid, native, "TURN-THREE: are you back?", 3, "TURN-TWO-ANSWER", "TURN-ONE-ANSWER", "PLAN-DONE-ANSWER")
}

// codexPlanSteps answers the PLAN-STEP-TURN turn of a Codex thread: an
// update_plan call starting the step, then one completing it (told apart by
// the tool outputs the request already carries), then the turn's answer.
func codexPlanSteps(r fakemodel.Request) fakemodel.Reply {
	plan := func(id, status string) fakemodel.Reply {
		return fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: id, Name: "update_plan",
			Input: json.RawMessage(`{"plan":[{"step":"Write the parser","status":"` + status + `"}]}`)}}
	}
	switch strings.Count(string(r.Body), `"function_call_output"`) {
	case 0:
		return plan("call_plan_1", "in_progress")
	case 1:
		return plan("call_plan_2", "completed")
	}
	return fakemodel.Reply{Text: "PLAN-DONE-ANSWER: the parser is done."}
}

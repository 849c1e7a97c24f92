package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// The live-thread tests of the harnesses forked natively besides Claude
// Code and Codex: OpenCode (its session fork, on its fork server once that
// answers), an ACP agent that advertises session/fork (claude-agent-acp, in
// a second agent process) and DeepSeek Harness (its session.fork). Each
// runs a turn, a manual checkpoint, a turn, then a shutdown checkpoint, a
// native resume in a new bridge process and a turn: every checkpoint is
// the agent's, by a fork, and no request of the live thread carries the
// planted marker, the request's heading or the reply.

// checkpointsLeaveLiveThread drives that sequence on harness, configured
// by setup.
func checkpointsLeaveLiveThread(t *testing.T, harness string, o harnessOptions, setup func(*testing.T, *harnessEnv)) {
	t.Helper()
	o.Config = liveThreadConfig
	h := newHarnessEnv(t, o)
	if setup != nil {
		setup(t, h)
	}
	h.onText(checkpointMarker, inProse(checkpointJSON(replyMarker+": the parser is written; port 55837")))
	h.onText("TURN-ONE", "TURN-ONE-ANSWER: port 55837 noted.")
	h.onText("TURN-TWO", "TURN-TWO-ANSWER: done.")
	h.onText("TURN-THREE", "TURN-THREE-ANSWER: back.")
	c := h.start(t)
	sid := h.create(t, c, harness, "live thread")
	db := h.openDB(t)
	native := sessionNative(t, db, sid)

	say(t, c, sid, "TURN-ONE: the server listens on port 55837.")
	res := rpctest.Must(c.Client, c.SessionCheckpoint, schema.SessionCheckpointParams{SessionID: sid, Reason: "manual"})
	if res.Method != "fork" {
		t.Fatalf("session/checkpoint = %+v, want method fork", res)
	}
	checkForkCheckpoint(t, c, sid, res.EntryID, "manual")
	say(t, c, sid, "TURN-TWO: add a health check.")
	live := checkLiveThreadClean(t, h, native)
	last := live[len(live)-1]
	if !strings.Contains(last.LastUserText, "TURN-TWO") || !strings.Contains(requestText(last), "TURN-ONE-ANSWER") {
		t.Errorf("the live request after the manual checkpoint lost the turn before it (last user text %.60q)", last.LastUserText)
	}

	shutdownThenResume(t, h, c, sid, native, "TURN-THREE: are you back?", 2, "TURN-TWO-ANSWER", "TURN-ONE-ANSWER")
}

// TestE2EOpenCodeCheckpointsLeaveLiveThread: real OpenCode.
func TestE2EOpenCodeCheckpointsLeaveLiveThread(t *testing.T) {
	t.Parallel()
	checkpointsLeaveLiveThread(t, "opencode", harnessOptions{}, addOpenCode)
}

// TestE2EACPCheckpointsLeaveLiveThread: real claude-agent-acp (which
// advertises session/fork, and reports usage in its prompt results) over
// real Claude Code.
func TestE2EACPCheckpointsLeaveLiveThread(t *testing.T) {
	t.Parallel()
	checkpointsLeaveLiveThread(t, "acp", harnessOptions{}, func(t *testing.T, h *harnessEnv) {
		addACP(t, h)
		sec := h.config["harnesses"].(map[string]any)["acp"].(map[string]any)
		sec["command"] = adaptertest.FindBinary(t, "claude-agent-acp")
		h.writeConfig(t)
	})
}

// TestE2EDSHCheckpointsLeaveLiveThread: the real DeepSeek Harness web
// server. Its checkpoint forks (the manual one and the shutdown ones) are
// made on the fork server Bridge starts: the user's DSH_HOME holds no
// session but the live one afterwards (a fork on the user's server leaves
// its child's folder there).
func TestE2EDSHCheckpointsLeaveLiveThread(t *testing.T) {
	t.Parallel()
	var home string
	checkpointsLeaveLiveThread(t, "dsh", harnessOptions{DSH: true}, func(t *testing.T, h *harnessEnv) { home = h.dsh.Home })
	dirs, err := filepath.Glob(filepath.Join(home, "sessions", "*", "*"))
	if err != nil || len(dirs) != 1 {
		t.Errorf("the user's DSH_HOME holds %d sessions after the checkpoints, want the live one only: %v %v", len(dirs), dirs, err)
	}
}

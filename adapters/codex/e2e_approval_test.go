package codex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// codexApprovalRun drives one real-codex turn in which the fake model runs
// `touch approved.txt` through exec_command (not trusted, so Codex asks),
// with approve as the approver. It returns the file's path, the requests
// the approver saw, the events, and what the model server received.
func codexApprovalRun(t *testing.T, approve core.Approver) (string, []core.ApprovalRequest, *adaptertest.Events, []fakemodel.Request) {
	t.Helper()
	// The sandbox lets the working directory be written, so an approved
	// command can change it; untrusted commands are still asked about.
	env := newE2E(t, "-c", `sandbox_mode="workspace-write"`)
	ctx := ctxT(t)
	file := filepath.Join(env.cwd, "approved.txt")
	args, _ := json.Marshal(map[string]any{"cmd": "touch approved.txt", "workdir": env.cwd})
	env.model.Enqueue(
		fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: "call_touch_1", Name: "exec_command", Input: args}},
		fakemodel.Reply{Text: "Done."},
	)
	var mu sync.Mutex
	var seen []core.ApprovalRequest
	var wrapped core.Approver
	if approve != nil {
		wrapped = func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
			mu.Lock()
			seen = append(seen, r)
			mu.Unlock()
			return approve(ctx, r)
		}
	}
	var c adaptertest.Events
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd, Approve: wrapped}, c.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLive(t, l)
	res, err := l.Prompt(ctx, text("create approved.txt"))
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt = %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return file, seen, &c, env.model.Requests()
}

// functionOutput returns the output Codex sent the model for call id.
func functionOutput(t *testing.T, reqs []fakemodel.Request, callID string) string {
	t.Helper()
	for _, r := range reqs {
		var body struct {
			Input []struct {
				Type   string          `json:"type"`
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
			} `json:"input"`
		}
		json.Unmarshal(r.Body, &body)
		for _, it := range body.Input {
			if it.Type == "function_call_output" && it.CallID == callID {
				return string(it.Output)
			}
		}
	}
	t.Fatalf("no function_call_output for %s reached the model", callID)
	return ""
}

func TestE2EApprovalAllowOnceRunsTheCommand(t *testing.T) {
	file, seen, c, reqs := codexApprovalRun(t, func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
		return core.ApprovalDecision{OptionID: string(core.AllowOnce), Kind: core.AllowOnce, By: core.DecidedByUser}
	})
	done := c.OfKind(core.KindToolCompleted)
	if len(done) != 1 {
		t.Fatalf("tool.completed entries: %v", done)
	}
	if p := payloadOf(t, done[0]); p["toolId"] != "call_touch_1" || p["exitCode"] != float64(0) {
		t.Errorf("tool.completed %s", done[0].Payload)
	}
	t.Logf("the model was told: %s", functionOutput(t, reqs, "call_touch_1"))
	if len(seen) != 1 || seen[0].Kind != "execute" || !strings.Contains(seen[0].Title, "touch approved.txt") {
		t.Fatalf("approver saw %+v", seen)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the allowed command did not run: %v", err)
	}
}

func TestE2EApprovalRejectOnceIsARefusal(t *testing.T) {
	file, seen, _, reqs := codexApprovalRun(t, func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
		return core.ApprovalDecision{OptionID: string(core.RejectOnce), Kind: core.RejectOnce, By: core.DecidedByUser}
	})
	if len(seen) != 1 {
		t.Fatalf("approver asked %d times", len(seen))
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a refused command ran: %v", err)
	}
	out := functionOutput(t, reqs, "call_touch_1")
	t.Logf("the model was told: %s", out)
	if !strings.Contains(strings.ToLower(out), "reject") && !strings.Contains(strings.ToLower(out), "declin") &&
		!strings.Contains(strings.ToLower(out), "denied") {
		t.Errorf("the model was not told of the refusal: %s", out)
	}
}

func TestE2EApprovalWithoutApproverRejects(t *testing.T) {
	file, _, _, reqs := codexApprovalRun(t, nil)
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a command nobody allowed ran: %v", err)
	}
	functionOutput(t, reqs, "call_touch_1")
}

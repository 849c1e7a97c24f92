package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// approvalRun drives one real-claude turn in which the fake model calls
// Write (a tool the preset does not allow), with approve as the session's
// approver. It returns the file's path, the requests the approver saw, the
// recorded entries and the requests the model server received.
func approvalRun(t *testing.T, approve core.Approver) (string, []core.ApprovalRequest, *collector, []fakemodel.Request) {
	t.Helper()
	env := newE2E(t)
	ctx := testCtx(t)
	file := filepath.Join(env.cwd, "approved.txt")
	input, _ := json.Marshal(map[string]string{"file_path": file, "content": "written after approval\n"})
	env.fake.Enqueue(
		fakemodel.Reply{Text: "Writing it.", ToolCall: &fakemodel.ToolCall{ID: "toolu_write_1", Name: "Write", Input: input}},
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
	var c collector
	preset := core.Preset{Name: "reader", Harness: Harness, AllowedTools: []string{"Read"}, PermissionMode: "default"}
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd, Preset: preset, Approve: wrapped}, c.sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	res, err := l.Prompt(ctx, text("write approved.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	mu.Lock()
	defer mu.Unlock()
	return file, seen, &c, env.fake.Requests()
}

// toolResultSent returns the tool_result the harness sent the model for
// toolID (the text of the second request's last user message block).
func toolResultSent(t *testing.T, reqs []fakemodel.Request, toolID string) string {
	t.Helper()
	for _, r := range reqs {
		var body struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(r.Body, &body)
		for _, m := range body.Messages {
			var blocks []struct {
				Type      string          `json:"type"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				IsError   bool            `json:"is_error"`
			}
			if json.Unmarshal(m.Content, &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				if b.Type == "tool_result" && b.ToolUseID == toolID {
					return string(b.Content)
				}
			}
		}
	}
	t.Fatalf("no tool_result for %s reached the model", toolID)
	return ""
}

func TestE2EApprovalAllowOnceRunsTheTool(t *testing.T) {
	t.Parallel()
	file, seen, c, _ := approvalRun(t, func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
		return core.ApprovalDecision{OptionID: string(core.AllowOnce), Kind: core.AllowOnce, By: core.DecidedByUser}
	})
	if len(seen) != 1 {
		t.Fatalf("approver asked %d times, want 1: %+v", len(seen), seen)
	}
	r := seen[0]
	if r.ToolCallID != "toolu_write_1" || r.Kind != "edit" || r.Key != "Write" || !strings.Contains(r.Title, "approved.txt") ||
		!strings.Contains(string(r.RawInput), "written after approval") {
		t.Errorf("approval request %+v", r)
	}
	b, err := os.ReadFile(file)
	if err != nil || string(b) != "written after approval\n" {
		t.Fatalf("the allowed Write did not run: %q %v", b, err)
	}
	done := c.entries(core.KindToolCompleted)
	if len(done) != 1 || payload(t, done[0])["isError"] == true {
		t.Fatalf("tool.completed = %+v", done)
	}
}

func TestE2EApprovalRejectOnceIsARefusal(t *testing.T) {
	t.Parallel()
	file, seen, c, reqs := approvalRun(t, func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
		return core.ApprovalDecision{OptionID: string(core.RejectOnce), Kind: core.RejectOnce, By: core.DecidedByUser}
	})
	if len(seen) != 1 {
		t.Fatalf("approver asked %d times, want 1", len(seen))
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a refused Write ran: %v", err)
	}
	done := c.entries(core.KindToolCompleted)
	if len(done) != 1 || payload(t, done[0])["isError"] != true {
		t.Fatalf("tool.completed = %+v, want an error result", done)
	}
	if got := toolResultSent(t, reqs, "toolu_write_1"); !strings.Contains(got, "refused") {
		t.Errorf("the model was told %s, want the refusal", got)
	}
}

func TestE2EApprovalWithoutApproverRejects(t *testing.T) {
	t.Parallel()
	// No approver: the preset's policy (no ApprovalPolicy: reject) answers
	// at once; the turn ends instead of hanging.
	file, _, c, reqs := approvalRun(t, nil)
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a Write nobody allowed ran: %v", err)
	}
	done := c.entries(core.KindToolCompleted)
	if len(done) != 1 || payload(t, done[0])["isError"] != true {
		t.Fatalf("tool.completed = %+v", done)
	}
	if got := toolResultSent(t, reqs, "toolu_write_1"); !strings.Contains(got, "refused") {
		t.Errorf("the model was told %s", got)
	}
}

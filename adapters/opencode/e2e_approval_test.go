package opencode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// askingConfig is fakeProviderConfig with OpenCode's permission for edits
// set to "ask", so a write is a tool call OpenCode asks about.
func askingConfig(url string) string {
	var cfg map[string]any
	_ = json.Unmarshal([]byte(fakeProviderConfig(url)), &cfg)
	cfg["permission"] = map[string]any{"edit": "ask", "bash": "ask"}
	b, _ := json.Marshal(cfg)
	return string(b)
}

// TestE2EPermissionRelayed drives the real `opencode serve`: the fake model
// writes a file, OpenCode asks (permission.asked), the session's approver
// decides. Allow once writes the file and records the tool's result;
// reject once leaves it unwritten and the tool fails; with no approver the
// preset's policy rejects and the turn still ends.
func TestE2EPermissionRelayed(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	home := t.TempDir()
	h := New(Config{Command: bin, Home: home, ConfigJSON: askingConfig(model.URL), Env: offlineEnv})
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		h.Close(cctx)
	})
	for _, tc := range []struct {
		name    string
		kind    core.ApprovalOptionKind // "" for no approver
		written bool
	}{
		{"allow_once", core.AllowOnce, true},
		{"reject_once", core.RejectOnce, false},
		{"no_approver", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case has its own bound (the first one includes the
			// server's start), so that a loaded machine does not time out
			// the three as one.
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
			defer cancel()
			cwd := t.TempDir()
			target := filepath.Join(cwd, "approved.txt")
			input, _ := json.Marshal(map[string]string{"filePath": target, "content": "written after approval\n"})
			callID := "call_" + tc.name
			model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
				body := string(r.Body)
				if strings.Contains(strings.ToLower(body), "title generator") {
					return fakemodel.Reply{Text: "A title"}, true
				}
				if strings.Contains(r.LastUserText, "write the approval file") && !strings.Contains(body, `"role":"tool"`) {
					return fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: callID, Name: "write", Input: input}}, true
				}
				return fakemodel.Reply{Text: "finished"}, true
			})
			var mu sync.Mutex
			var seen []core.ApprovalRequest
			req := core.CreateRequest{Cwd: cwd}
			if tc.kind != "" {
				req.Approve = func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
					mu.Lock()
					seen = append(seen, r)
					mu.Unlock()
					return core.ApprovalDecision{OptionID: string(tc.kind), Kind: tc.kind, By: core.DecidedByUser}
				}
			}
			log := &sinkLog{}
			l, err := h.CreateSession(ctx, req, log.sink)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(ctx)
			if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "please write the approval file"}}); err != nil {
				t.Fatalf("Prompt: %v", err)
			}
			_, statErr := os.Stat(target)
			if tc.written != (statErr == nil) {
				t.Errorf("file written = %v, want %v", statErr == nil, tc.written)
			}
			mu.Lock()
			if tc.kind != "" && (len(seen) != 1 || seen[0].Kind != "edit" || seen[0].ToolCallID != callID || seen[0].ID == "") {
				t.Errorf("approver saw %+v", seen)
			}
			mu.Unlock()
			done := ofKind(log.entries(), core.KindToolCompleted)
			if len(done) != 1 {
				t.Fatalf("tool.completed entries %v", kinds(log.entries()))
			}
			p := payload(t, done[0])
			t.Logf("tool.completed %s", done[0].Payload)
			if failed := p["isError"] == true || p["status"] == "error"; failed == tc.written {
				t.Errorf("tool result %v for written=%v", p, tc.written)
			}
		})
	}
}

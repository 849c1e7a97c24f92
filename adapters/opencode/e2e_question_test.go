package opencode

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// TestE2EQuestionRelayed drives the real `opencode serve`: the fake model
// calls OpenCode's `question` tool, which waits for a client's reply. The
// session's approver gets the question with its answers as options; the
// label the user picks reaches the model as the tool's result. A dismissal,
// or nobody to ask (even under a preset that approves tools), dismisses
// the question: the tool fails and OpenCode ends the turn, instead of
// waiting for ever as it did before Bridge answered questions.
func TestE2EQuestionRelayed(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	home := t.TempDir()
	h := New(Config{Command: bin, Home: home, ConfigJSON: fakeProviderConfig(model.URL), Env: offlineEnv})
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		h.Close(cctx)
	})
	input := json.RawMessage(`{"questions":[{"question":"Which colour shall the button be?","header":"Colour",` +
		`"options":[{"label":"Red","description":"warm"},{"label":"Blue","description":"cool"}]}]}`)
	for _, tc := range []struct {
		name   string
		answer string // the option name the user picks; "" dismisses
		asker  bool   // false: no approver at all
		result string // answered: in the tool result the model gets next; dismissed: the tool's error
	}{
		{"answered", "Blue", true, `"Which colour shall the button be?"="Blue"`},
		{"dismissed", "", true, "dismissed this question"},
		{"nobody_to_ask", "", false, "dismissed this question"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
			defer cancel()
			callID := "call_q_" + tc.name
			prompt := "ask me about the colour " + tc.name
			var mu sync.Mutex
			var toolResult string
			model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
				body := string(r.Body)
				if strings.Contains(strings.ToLower(body), "title generator") {
					return fakemodel.Reply{Text: "A title"}, true
				}
				if !strings.Contains(body, prompt) {
					return fakemodel.Reply{Text: "finished"}, true
				}
				if !strings.Contains(body, `"role":"tool"`) {
					return fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: callID, Name: "question", Input: input}}, true
				}
				mu.Lock()
				toolResult = strings.ReplaceAll(body, `\"`, `"`)
				mu.Unlock()
				return fakemodel.Reply{Text: "noted"}, true
			})
			var seen []core.ApprovalRequest
			// An approving preset: the policy must still not answer a
			// question for the user.
			req := core.CreateRequest{Cwd: t.TempDir(), Preset: core.Preset{ApprovalPolicy: "approve"}}
			if tc.asker {
				req.Approve = func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
					mu.Lock()
					seen = append(seen, r)
					mu.Unlock()
					for _, o := range r.Options {
						if tc.answer != "" && o.Name == tc.answer {
							return core.ApprovalDecision{OptionID: o.ID, Kind: o.Kind, By: core.DecidedByUser}
						}
						if tc.answer == "" && !core.Allows(o.Kind) {
							return core.ApprovalDecision{OptionID: o.ID, Kind: o.Kind, By: core.DecidedByUser}
						}
					}
					t.Errorf("no option to choose in %+v", r.Options)
					return core.ApprovalDecision{}
				}
			}
			log := &sinkLog{}
			l, err := h.CreateSession(ctx, req, log.sink)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(ctx)
			if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: prompt}}); err != nil {
				t.Fatalf("Prompt: %v (a question nobody answers must not hold the turn)", err)
			}
			mu.Lock()
			defer mu.Unlock()
			// OpenCode ends the turn at a dismissed question: the model is
			// not asked again.
			if tc.answer != "" && !strings.Contains(toolResult, tc.result) {
				t.Errorf("the model's next request does not carry %q:\n%.2000s", tc.result, toolResult)
			}
			if tc.answer == "" && toolResult != "" {
				t.Errorf("the model was asked again after a dismissal:\n%.2000s", toolResult)
			}
			if tc.asker {
				if len(seen) != 1 {
					t.Fatalf("approver asked %d times, want 1: %+v", len(seen), seen)
				}
				r := seen[0]
				var names []string
				for _, o := range r.Options {
					names = append(names, o.Name+"/"+string(o.Kind))
				}
				if !r.Question || r.ToolCallID != callID || !strings.Contains(r.Title, "Which colour shall the button be?") ||
					strings.Join(names, ",") != "Red/allow_once,Blue/allow_once,Dismiss/reject_once" {
					t.Errorf("approval request %+v, options %v", r, names)
				}
			}
			done := ofKind(log.entries(), core.KindToolCompleted)
			if len(done) != 1 {
				t.Fatalf("tool.completed entries %v", kinds(log.entries()))
			}
			p := payload(t, done[0])
			t.Logf("tool.completed %s", done[0].Payload)
			if failed := p["isError"] == true || p["status"] == "error"; failed != (tc.answer == "") {
				t.Errorf("tool result %v for answer %q", p, tc.answer)
			}
			if e, _ := p["error"].(string); tc.answer == "" && !strings.Contains(e, tc.result) {
				t.Errorf("tool error %q, want %q", e, tc.result)
			}
		})
	}
}

// TestQuestionRequests checks the mapping on its own: one approval request
// per question, answers as allow-once options by label, a dismissal last,
// and only a user's allow answer counts.
func TestQuestionRequests(t *testing.T) {
	var q questionAsked
	if err := json.Unmarshal([]byte(`{"id":"que_1","sessionID":"ses_1","tool":{"messageID":"m","callID":"c"},
		"questions":[{"question":"Which?","header":"Pick","options":[{"label":"A"},{"label":" "},{"label":"B"}]},
		{"question":"Sure?","header":"Sure?","options":[]}]}`), &q); err != nil {
		t.Fatal(err)
	}
	rs := questionRequests(q)
	if len(rs) != 2 || rs[0].ID != "que_1/1" || rs[1].ID != "que_1/2" || rs[0].ToolCallID != "c" ||
		rs[0].Title != "Question: Pick: Which?" || rs[1].Title != "Question: Sure?" || !rs[0].Question {
		t.Fatalf("requests %+v", rs)
	}
	if len(rs[0].Options) != 3 || rs[0].Options[1].Name != "B" || rs[0].Options[2].ID != dismissOption ||
		len(rs[1].Options) != 1 {
		t.Fatalf("options %+v / %+v", rs[0].Options, rs[1].Options)
	}
	b := rs[0].Options[1]
	if got, ok := answerOf(rs[0], core.ApprovalDecision{OptionID: b.ID, Kind: b.Kind, By: core.DecidedByUser}); !ok || got != "B" {
		t.Errorf("user's B: %q %v", got, ok)
	}
	if _, ok := answerOf(rs[0], core.ApprovalDecision{OptionID: b.ID, Kind: b.Kind, By: core.DecidedByTimeout}); ok {
		t.Error("a timeout's allow answered the question")
	}
	if _, ok := answerOf(rs[0], core.ApprovalDecision{OptionID: dismissOption, Kind: core.RejectOnce, By: core.DecidedByUser}); ok {
		t.Error("a dismissal answered the question")
	}
	if d := core.PolicyDecision(core.Preset{ApprovalPolicy: "approve"}, rs[0], core.DecidedByPolicy, "x"); d.Allowed() {
		t.Errorf("an approving policy answered a question: %+v", d)
	}
}

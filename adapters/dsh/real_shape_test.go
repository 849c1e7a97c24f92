package dsh_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// shapeTurn is the decoded model request of the turn whose prompt holds
// SHAPE-TURN among rs: a request carrying tools (DSH's title request
// quotes the prompt too, with no tools). Its runtime-context message ends
// the request, so the prompt is looked for in the whole body.
func shapeTurn(t *testing.T, rs []fakemodel.Request) map[string]any {
	t.Helper()
	var found map[string]any
	for _, r := range rs {
		var body map[string]any
		if !strings.Contains(string(r.Body), "SHAPE-TURN") || json.Unmarshal(r.Body, &body) != nil {
			continue
		}
		if tools, _ := body["tools"].([]any); len(tools) > 0 {
			found = body
		}
	}
	if found == nil {
		t.Fatalf("no model request of the SHAPE-TURN turn among %d", len(rs))
	}
	return found
}

// TestRealDSHRequestShape: an ordinary turn through Bridge (DSH's web API,
// the adapter's session.create and session.prompt) against the same turn
// (1) sent by a plain client of the same web API without Bridge, and (2) in
// DSH's own automation mode, `dsh --profile headless TASK`, with the same
// program, home and folder, diffed from the fake model's request log.
// Against (1) the requests are equal apart from ids: Bridge adds nothing.
// Against (2) the only differences are the two profiles' own
// (docs/checkpoints.md): the web profile's ask_user_question tool against
// the headless profile's str_replace_editor, subagent_fork running in the
// background by default, and the system prompt, which the web profile
// extends with its GUI and habits.
func TestRealDSHRequestShape(t *testing.T) {
	model, r := startReal(t)
	model.Responder(func(fakemodel.Request) (fakemodel.Reply, bool) { return fakemodel.Reply{Text: "SHAPE-REPLY"}, true })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cwd := t.TempDir()
	const prompt = "SHAPE-TURN hello"

	l, err := realHost(r).CreateSession(ctx, core.CreateRequest{Cwd: cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: prompt}}); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt: %+v %v\n%s", res, err, r.Logs())
	}
	bridge := shapeTurn(t, model.Requests())
	_ = l.Close(ctx)

	// (1) The same web API, driven by a plain client.
	before := len(model.Requests())
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err := r.Call("session.create", map[string]any{"cwd": cwd}, &created); err != nil {
		t.Fatal(err)
	}
	if err := r.Call("session.prompt", map[string]any{"sessionId": created.SessionID, "mode": "queue",
		"content": []map[string]any{{"type": "text", "text": prompt}}}, nil); err != nil {
		t.Fatal(err)
	}
	awaitTurnEnd(ctx, t, r.Call, created.SessionID)
	direct := shapeTurn(t, model.Requests()[before:])

	// (2) DSH's own automation mode.
	before = len(model.Requests())
	if out, err := r.Headless(ctx, cwd, prompt); err != nil || !strings.Contains(out, "SHAPE-REPLY") {
		t.Fatalf("dsh --profile headless: %v\n%s", err, out)
	}
	headless := shapeTurn(t, model.Requests()[before:])

	leaves := func(b map[string]any) map[string]string { return adaptertest.ShapeLeaves(b, cwd, "<cwd>") }
	if diff := adaptertest.ShapeDiff(leaves(bridge), leaves(direct)); len(diff) > 0 {
		t.Errorf("the turn through Bridge differs from the same web API driven without Bridge:\n%s", strings.Join(diff, "\n"))
	}
	var paths []string
	for _, d := range adaptertest.ShapeDiff(leaves(bridge), leaves(headless)) {
		paths = append(paths, strings.SplitN(d, ": bridge ", 2)[0])
	}
	want := []string{
		"bridge only: .tools[ask_user_question]",
		"differs: .messages[0].content",
		"differs: .tools[subagent_fork]",
		"other only: .tools[str_replace_editor]",
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Errorf("the turn through Bridge against `dsh --profile headless`:\n%s\nwant only:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
	// The web profile's system prompt only adds to the headless one (the
	// Web GUI it talks through, its file-reference and delegation habits).
	web, own := systemPrompt(bridge), systemPrompt(headless)
	for _, line := range strings.Split(own, "\n") {
		if !strings.Contains(web, line) {
			t.Errorf("the headless system prompt's line %.120q is not in the web profile's", line)
		}
	}
	if !strings.Contains(web, "DeepSeek Harness Web GUI") || strings.Contains(own, "DeepSeek Harness Web GUI") {
		t.Errorf("the web profile's system prompt should name its Web GUI, the headless one not")
	}
}

// systemPrompt is the text of a chat request's first (system) message.
func systemPrompt(body map[string]any) string {
	ms, _ := body["messages"].([]any)
	if len(ms) == 0 {
		return ""
	}
	m, _ := ms[0].(map[string]any)
	s, _ := m["content"].(string)
	return s
}

// awaitTurnEnd polls session.history until the session's turn has ended.
func awaitTurnEnd(ctx context.Context, t *testing.T, call func(string, any, any) error, sessionID string) {
	t.Helper()
	for {
		var hv struct {
			Events []struct {
				Event struct {
					Type string `json:"type"`
				} `json:"event"`
			} `json:"events"`
		}
		if err := call("session.history", map[string]any{"sessionId": sessionID, "maxMessages": 100}, &hv); err != nil {
			t.Fatal(err)
		}
		for _, e := range hv.Events {
			if e.Event.Type == "turn/end" {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the turn of %s did not end: %v", sessionID, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

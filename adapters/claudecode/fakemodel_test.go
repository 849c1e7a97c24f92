package claudecode

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
)

// The fake Anthropic endpoint is part of what these tests stand on; check
// its wire shapes directly.
func TestFakeAnthropicShapes(t *testing.T) {
	t.Parallel()
	srv, err := fakemodel.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	post := func(path, body string) *http.Response {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	msgs := `"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"please summarize"}]}]`

	// Streaming: the event order harness-offline.md gives, usage from the reply.
	srv.Enqueue(fakemodel.Reply{Text: "hello world", InputTokens: 990000})
	resp := post("/v1/messages?beta=true", `{"model":"m","stream":true,`+msgs+`}`)
	var events []string
	var start struct {
		Message struct {
			Usage struct {
				InputTokens int64 `json:"input_tokens"`
			} `json:"usage"`
		} `json:"message"`
	}
	var textOut string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, ev)
		}
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if strings.Contains(d, `"message_start"`) {
				json.Unmarshal([]byte(d), &start)
			}
			var delta struct {
				Delta struct {
					Text string `json:"text"`
				} `json:"delta"`
			}
			if json.Unmarshal([]byte(d), &delta) == nil {
				textOut += delta.Delta.Text
			}
		}
	}
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("events: %s", got)
	}
	if start.Message.Usage.InputTokens != 990000 || textOut != "hello world" {
		t.Errorf("usage %d text %q", start.Message.Usage.InputTokens, textOut)
	}
	if r := srv.Requests()[0]; r.API != "anthropic" || r.LastUserText != "please summarize" || !r.IsSummaryRequest() {
		t.Errorf("recorded request %+v", r)
	}

	// Non-streaming with a tool call.
	srv.Enqueue(fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: "toolu_x", Name: "Read", Input: json.RawMessage(`{"file_path":"/a"}`)}})
	resp = post("/v1/messages", `{"model":"m",`+msgs+`}`)
	var m struct {
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	}
	json.NewDecoder(resp.Body).Decode(&m)
	if m.StopReason != "tool_use" || len(m.Content) != 1 || m.Content[0].Type != "tool_use" || m.Content[0].ID != "toolu_x" ||
		string(m.Content[0].Input) != `{"file_path":"/a"}` {
		t.Errorf("tool reply %+v", m)
	}

	// A scripted status is an Anthropic error body.
	srv.Enqueue(fakemodel.Reply{Status: 529})
	resp = post("/v1/messages", `{"model":"m",`+msgs+`}`)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 529 || !strings.Contains(string(b), `"overloaded_error"`) {
		t.Errorf("status reply %d %s", resp.StatusCode, b)
	}

	// count_tokens answers a number; a bad body is a 400.
	resp = post("/v1/messages/count_tokens", `{"model":"m",`+msgs+`}`)
	var ct struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	json.NewDecoder(resp.Body).Decode(&ct)
	if ct.InputTokens == nil || *ct.InputTokens <= 0 {
		t.Errorf("count_tokens: %+v", ct)
	}
	if resp := post("/v1/messages", `not json`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad body: %d", resp.StatusCode)
	}
}

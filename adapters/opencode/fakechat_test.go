package opencode

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
)

// TestFakeModelChatCompletions checks the fake model server's OpenAI Chat
// Completions endpoint, which the end-to-end tests point OpenCode at.
func TestFakeModelChatCompletions(t *testing.T) {
	m := startModel(t)
	post := func(ctx context.Context, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	ctx := context.Background()

	m.Enqueue(fakemodel.Reply{Text: "hello there", InputTokens: 77})
	resp, body := post(ctx, `{"model":"fake-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream answer %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var text, finish string
	var usage map[string]any
	var role bool
	frames := strings.Split(strings.TrimSpace(body), "\n\n")
	if frames[len(frames)-1] != "data: [DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", frames[len(frames)-1])
	}
	for _, f := range frames[:len(frames)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(f, "data: ")), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %q: %v", f, err)
		}
		for _, ch := range c.Choices {
			role = role || ch.Delta.Role == "assistant"
			text += ch.Delta.Content
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			usage = c.Usage
		}
	}
	if !role || text != "hello there" || finish != "stop" || usage["prompt_tokens"] != float64(77) {
		t.Errorf("stream: role=%v text=%q finish=%q usage=%v", role, text, finish, usage)
	}
	if got := m.Requests()[0]; got.API != "chat" || got.LastUserText != "first\nsecond" {
		t.Errorf("recorded request = %+v", got)
	}

	m.Enqueue(fakemodel.Reply{ToolCall: &fakemodel.ToolCall{ID: "call_1", Name: "write", Input: json.RawMessage(`{"filePath":"/x"}`)}})
	_, body = post(ctx, `{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"do it"}]}`)
	type chunk struct {
		Choices []struct {
			Delta struct {
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
	}
	calls := 0
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var call chunk
		if err := json.Unmarshal([]byte(data), &call); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		for _, ch := range call.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				calls++
				if tc.Index != 0 || tc.ID != "call_1" || tc.Type != "function" || tc.Function.Name != "write" || tc.Function.Arguments != `{"filePath":"/x"}` {
					t.Errorf("tool call = %+v", tc)
				}
			}
		}
	}
	if calls != 1 || !strings.Contains(body, `"finish_reason":"tool_calls"`) {
		t.Errorf("tool call stream (%d calls) = %s", calls, body)
	}

	_, body = post(ctx, `{"model":"fake-model","messages":[{"role":"user","content":"please summarize the conversation"}]}`)
	var full struct {
		Object  string `json:"object"`
		Choices []struct {
			Message      struct{ Content string } `json:"message"`
			FinishReason string                   `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &full); err != nil || full.Object != "chat.completion" ||
		!strings.Contains(full.Choices[0].Message.Content, "<summary>") || full.Usage.PromptTokens != 1200 {
		t.Errorf("non-stream summary answer = %s (%v)", body, err)
	}

	m.Enqueue(fakemodel.Reply{Status: 429})
	resp, body = post(ctx, `{"model":"fake-model","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 429 || !strings.Contains(body, `"error"`) {
		t.Errorf("status reply = %d %s", resp.StatusCode, body)
	}
	_, body = post(ctx, `not json`)
	if !strings.Contains(body, "not JSON") {
		t.Errorf("bad body answer = %s", body)
	}

	m.Enqueue(fakemodel.Reply{Hang: true})
	hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if resp, _ := post(hctx, `{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"hang"}]}`); resp != nil {
		t.Errorf("a hanging reply answered with %d", resp.StatusCode)
	}
}

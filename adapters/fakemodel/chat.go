package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// chatError writes an OpenAI-shaped error body with the given status.
func chatError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "fake_error", "code": status,
	}})
	w.Write(b)
}

// chatToolCalls renders a scripted tool call in the Chat Completions shape.
func chatToolCalls(tc *ToolCall, withIndex bool) []map[string]any {
	args := string(tc.Input)
	if args == "" {
		args = "{}"
	}
	id := tc.ID
	if id == "" {
		id = "call_fake_1"
	}
	call := map[string]any{
		"id":       id,
		"type":     "function",
		"function": map[string]any{"name": tc.Name, "arguments": args},
	}
	if withIndex {
		call["index"] = 0
	}
	return []map[string]any{call}
}

// openaiChat answers POST /v1/chat/completions, streaming (SSE chunks: a role
// delta, content deltas or a tool call, the finish reason, a usage chunk and
// "data: [DONE]") or not (one chat.completion object).
func (s *Server) openaiChat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		chatError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	body, err := readBody(r)
	if err != nil {
		chatError(w, http.StatusBadRequest, err.Error())
		return
	}
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		chatError(w, http.StatusBadRequest, "request body: "+err.Error())
		return
	}
	reply := s.record(Request{API: "chat", Path: r.URL.Path, Body: body, LastUserText: lastUserText(req, false)})
	if reply.Hang {
		s.hang(r)
		return
	}
	if reply.Status != 0 {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = fmt.Sprintf("fake model: scripted status %d", reply.Status)
		}
		chatError(w, reply.Status, msg)
		return
	}
	model := req.Model
	if model == "" {
		model = "fake-model"
	}
	id := fmt.Sprintf("chatcmpl-fake-%d", time.Now().UnixNano())
	created := time.Now().Unix()
	finish := "stop"
	if reply.ToolCall != nil {
		finish = "tool_calls"
	}
	usage := map[string]any{
		"prompt_tokens":     reply.InputTokens + reply.CacheReadTokens,
		"completion_tokens": reply.OutputTokens,
		"total_tokens":      reply.InputTokens + reply.CacheReadTokens + reply.OutputTokens,
	}
	if reply.CacheReadTokens > 0 {
		// Cache hits are counted within prompt_tokens, as OpenAI and
		// DeepSeek count them.
		usage["prompt_tokens_details"] = map[string]any{"cached_tokens": reply.CacheReadTokens}
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": reply.Text}
		if reply.ToolCall != nil {
			msg["content"] = nil
			msg["tool_calls"] = chatToolCalls(reply.ToolCall, false)
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	chunk := func(delta map[string]any, finishReason any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finishReason}},
		}
	}
	sse(w, "", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if reply.ToolCall != nil {
		sse(w, "", chunk(map[string]any{"tool_calls": chatToolCalls(reply.ToolCall, true)}, nil))
	} else {
		for _, piece := range chatSplitText(reply.Text) {
			sse(w, "", chunk(map[string]any{"content": piece}, nil))
		}
	}
	sse(w, "", chunk(map[string]any{}, finish))
	sse(w, "", map[string]any{
		"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
		"choices": []any{}, "usage": usage,
	})
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// chatSplitText cuts text into at most two pieces so clients see more than one
// delta; empty text gives one empty piece.
func chatSplitText(text string) []string {
	if len(text) < 2 {
		return []string{text}
	}
	half := len(text) / 2
	for half < len(text) && !chatUTF8Start(text[half]) {
		half++
	}
	if half >= len(text) {
		return []string{text}
	}
	return []string{text[:half], text[half:]}
}

// chatUTF8Start reports whether b begins a UTF-8 sequence.
func chatUTF8Start(b byte) bool { return b&0xC0 != 0x80 }

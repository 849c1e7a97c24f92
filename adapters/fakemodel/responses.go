package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// respSeq numbers the ids the Responses endpoint hands out.
var respSeq atomic.Int64

// openaiResponses answers POST /v1/responses (OpenAI Responses API, used by
// Codex) with a server-sent event stream: response.created,
// response.in_progress, the output item (a message streamed as text, or a
// function_call), and response.completed carrying usage. Codex reads usage
// to decide on auto-compaction, so Reply.InputTokens drives it.
func (s *Server) openaiResponses(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := readBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		Model string            `json:"model"`
		Input []json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(body, &req)
	reply := s.record(Request{API: "responses", Path: r.URL.Path, Body: body, LastUserText: responsesLastUserText(req.Input)})

	if reply.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("fakemodel: scripted status %d", reply.Status),
			"type":    "fake_error", "code": nil, "param": nil,
		}})
		w.Write(b)
		return
	}

	n := respSeq.Add(1)
	respID := fmt.Sprintf("resp_fake_%d", n)
	model := req.Model
	if model == "" {
		model = "fake-model"
	}
	created := time.Now().Unix()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	seq := 0
	emit := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		sse(w, typ, fields)
	}
	base := func(status string, output []any, usage any) map[string]any {
		resp := map[string]any{
			"id": respID, "object": "response", "created_at": created, "status": status,
			"model": model, "output": output, "parallel_tool_calls": true, "tool_choice": "auto",
			"tools": []any{}, "error": nil, "incomplete_details": nil,
		}
		if usage != nil {
			resp["usage"] = usage
		}
		return resp
	}
	emit("response.created", map[string]any{"response": base("in_progress", []any{}, nil)})
	emit("response.in_progress", map[string]any{"response": base("in_progress", []any{}, nil)})
	if reply.Hang {
		s.hang(r)
		return
	}

	var item map[string]any
	if tc := reply.ToolCall; tc != nil {
		item = s.responsesToolCall(emit, n, tc)
	} else {
		item = responsesMessage(emit, n, reply.Text)
	}
	usage := map[string]any{
		"input_tokens":          reply.InputTokens + reply.CacheReadTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": reply.CacheReadTokens},
		"output_tokens":         reply.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          reply.InputTokens + reply.CacheReadTokens + reply.OutputTokens,
	}
	emit("response.completed", map[string]any{"response": base("completed", []any{item}, usage)})
}

// responsesMessage streams one assistant message item and returns it whole.
func responsesMessage(emit func(string, map[string]any), n int64, text string) map[string]any {
	itemID := fmt.Sprintf("msg_fake_%d", n)
	emit("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
		"id": itemID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{},
	}})
	emptyPart := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
	emit("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": emptyPart})
	for _, chunk := range splitHalves(text) {
		emit("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": chunk, "logprobs": []any{}})
	}
	emit("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": text, "logprobs": []any{}})
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	emit("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part})
	item := map[string]any{"id": itemID, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
	emit("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	return item
}

// responsesToolCall streams one function_call item and returns it whole.
func (s *Server) responsesToolCall(emit func(string, map[string]any), n int64, tc *ToolCall) map[string]any {
	itemID := fmt.Sprintf("fc_fake_%d", n)
	callID := tc.ID
	if callID == "" {
		callID = fmt.Sprintf("call_fake_%d", n)
	}
	args := string(tc.Input)
	if args == "" {
		args = "{}"
	}
	emit("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
		"id": itemID, "type": "function_call", "status": "in_progress", "call_id": callID, "name": tc.Name, "arguments": "",
	}})
	emit("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": 0, "delta": args})
	emit("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": 0, "arguments": args})
	item := map[string]any{"id": itemID, "type": "function_call", "status": "completed", "call_id": callID, "name": tc.Name, "arguments": args}
	emit("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	return item
}

// splitHalves splits text into at most two deltas so clients see streaming.
func splitHalves(text string) []string {
	if len(text) < 2 {
		return []string{text}
	}
	mid := len(text) / 2
	for mid < len(text) && !utf8Start(text[mid]) {
		mid++
	}
	return []string{text[:mid], text[mid:]}
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// responsesLastUserText flattens the text of the last user message in a
// Responses API input list (a plain string input counts as user text).
func responsesLastUserText(input []json.RawMessage) string {
	for i := len(input) - 1; i >= 0; i-- {
		var it struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(input[i], &it) != nil || it.Role != "user" {
			continue
		}
		if it.Type != "" && it.Type != "message" {
			continue
		}
		var str string
		if json.Unmarshal(it.Content, &str) == nil {
			return str
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(it.Content, &parts)
		var b strings.Builder
		for _, p := range parts {
			if p.Text != "" {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(p.Text)
			}
		}
		return b.String()
	}
	return ""
}

package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// anthropicSeq numbers message ids so each answer is distinct.
var anthropicSeq atomic.Int64

// anthropicError writes an Anthropic-shaped error body with status.
func anthropicError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
	w.Write(b)
}

// anthropicErrorKind names the API error type the real service uses for
// status.
func anthropicErrorKind(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

// anthropicMessages answers POST /v1/messages, streaming (SSE) or not.
func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		anthropicError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
		return
	}
	body, err := readBody(r)
	if err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "body is not a Messages request: "+err.Error())
		return
	}
	reply := s.record(Request{API: "anthropic", Path: r.URL.Path, Body: body, LastUserText: lastUserText(req, true)})
	if reply.Hang {
		s.hang(r)
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		anthropicError(w, reply.Status, anthropicErrorKind(reply.Status), fmt.Sprintf("fakemodel: scripted status %d", reply.Status))
		return
	}
	model := req.Model
	if model == "" {
		model = "fake-model"
	}
	id := fmt.Sprintf("msg_fake_%d", anthropicSeq.Add(1))
	stop := "end_turn"
	var blocks []map[string]any
	if reply.Text != "" || reply.ToolCall == nil {
		blocks = append(blocks, map[string]any{"type": "text", "text": reply.Text})
	}
	if tc := reply.ToolCall; tc != nil {
		input := tc.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		tid := tc.ID
		if tid == "" {
			tid = fmt.Sprintf("toolu_fake_%d", anthropicSeq.Add(1))
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": tid, "name": tc.Name, "input": input})
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": reply.InputTokens, "output_tokens": reply.OutputTokens,
		"cache_creation_input_tokens": reply.CacheWriteTokens, "cache_read_input_tokens": reply.CacheReadTokens}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": reply.InputTokens, "output_tokens": 1,
			"cache_creation_input_tokens": reply.CacheWriteTokens, "cache_read_input_tokens": reply.CacheReadTokens}}})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			if i == 0 {
				sse(w, "ping", map[string]any{"type": "ping"})
			}
			for _, part := range splitText(reply.Text) {
				sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": part}})
			}
		case "tool_use":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			if i == 0 {
				sse(w, "ping", map[string]any{"type": "ping"})
			}
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(b["input"].(json.RawMessage))}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": reply.OutputTokens}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// splitText cuts t into two deltas (one when it is too short to split), as
// the real API streams text in pieces.
func splitText(t string) []string {
	if len(t) < 2 {
		return []string{t}
	}
	half := len(t) / 2
	for half < len(t) && !isRuneStart(t[half]) {
		half++
	}
	if half >= len(t) {
		return []string{t}
	}
	return []string{t[:half], t[half:]}
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// anthropicCountTokens answers POST /v1/messages/count_tokens with a rough
// count: a quarter of the body's bytes.
func (s *Server) anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"input_tokens":%d}`, len(strings.TrimSpace(string(body)))/4+1)
}

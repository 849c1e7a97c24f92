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
	b, _ := json.Marshal(anthropicErrorBody{Type: "error", Error: anthropicErrDesc{Type: kind, Message: msg}})
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
	var blocks []any
	if reply.Text != "" || reply.ToolCall == nil {
		blocks = append(blocks, anthropicText{Type: "text", Text: reply.Text})
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
		blocks = append(blocks, anthropicToolUse{Type: "tool_use", ID: tid, Name: tc.Name, Input: input})
		stop = "tool_use"
	}
	usage := anthropicUsage{InputTokens: reply.InputTokens, OutputTokens: reply.OutputTokens,
		CacheCreationInputTokens: reply.CacheWriteTokens, CacheReadInputTokens: reply.CacheReadTokens}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(anthropicMessage{ID: id, Type: "message", Role: "assistant", Model: model,
			Content: blocks, StopReason: &stop, Usage: usage})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	usage.OutputTokens = 1
	sse(w, "message_start", anthropicMessageStart{Type: "message_start", Message: anthropicMessage{
		ID: id, Type: "message", Role: "assistant", Model: model, Content: []any{}, Usage: usage}})
	ping := anthropicEvent{Type: "ping"}
	for i, b := range blocks {
		switch b := b.(type) {
		case anthropicText:
			sse(w, "content_block_start", anthropicBlockStart{Type: "content_block_start", Index: i,
				ContentBlock: anthropicText{Type: "text"}})
			if i == 0 {
				sse(w, "ping", ping)
			}
			for _, part := range splitText(reply.Text) {
				sse(w, "content_block_delta", anthropicBlockDelta{Type: "content_block_delta", Index: i,
					Delta: anthropicText{Type: "text_delta", Text: part}})
			}
		case anthropicToolUse:
			sse(w, "content_block_start", anthropicBlockStart{Type: "content_block_start", Index: i,
				ContentBlock: anthropicToolUse{Type: "tool_use", ID: b.ID, Name: b.Name, Input: json.RawMessage(`{}`)}})
			if i == 0 {
				sse(w, "ping", ping)
			}
			sse(w, "content_block_delta", anthropicBlockDelta{Type: "content_block_delta", Index: i,
				Delta: anthropicInputDelta{Type: "input_json_delta", PartialJSON: string(b.Input)}})
		}
		sse(w, "content_block_stop", anthropicBlockStop{Type: "content_block_stop", Index: i})
	}
	sse(w, "message_delta", anthropicMessageDelta{Type: "message_delta",
		Delta: anthropicStop{StopReason: stop}, Usage: anthropicOutputUsage{OutputTokens: reply.OutputTokens}})
	sse(w, "message_stop", anthropicEvent{Type: "message_stop"})
}

// The Messages API's wire shapes, as far as the fake model writes them.
type (
	anthropicEvent struct {
		Type string `json:"type"`
	}
	anthropicErrorBody struct {
		Type  string           `json:"type"`
		Error anthropicErrDesc `json:"error"`
	}
	anthropicErrDesc struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	// anthropicText is a text block, or (type text_delta) a piece of one.
	anthropicText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	anthropicToolUse struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	anthropicInputDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	anthropicUsage struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	}
	anthropicOutputUsage struct {
		OutputTokens int64 `json:"output_tokens"`
	}
	// anthropicMessage is a message; StopReason is null while it streams,
	// and StopSequence always (no stop sequences are scripted).
	anthropicMessage struct {
		ID           string         `json:"id"`
		Type         string         `json:"type"`
		Role         string         `json:"role"`
		Model        string         `json:"model"`
		Content      []any          `json:"content"`
		StopReason   *string        `json:"stop_reason"`
		StopSequence *string        `json:"stop_sequence"`
		Usage        anthropicUsage `json:"usage"`
	}
	anthropicMessageStart struct {
		Type    string           `json:"type"`
		Message anthropicMessage `json:"message"`
	}
	anthropicBlockStart struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock any    `json:"content_block"`
	}
	anthropicBlockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta any    `json:"delta"`
	}
	anthropicBlockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	anthropicStop struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	anthropicMessageDelta struct {
		Type  string               `json:"type"`
		Delta anthropicStop        `json:"delta"`
		Usage anthropicOutputUsage `json:"usage"`
	}
)

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

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
		b, _ := json.Marshal(respErrorBody{Error: respErrDesc{
			Message: fmt.Sprintf("fakemodel: scripted status %d", reply.Status), Type: "fake_error"}})
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
	emit := func(typ string, ev respEvent) {
		ev.Type = typ
		ev.SequenceNumber = seq
		seq++
		sse(w, typ, ev)
	}
	base := func(status string, output []any, usage *respUsage) *respObject {
		return &respObject{ID: respID, Object: "response", CreatedAt: created, Status: status,
			Model: model, Output: output, ParallelToolCalls: true, ToolChoice: "auto", Tools: []any{}, Usage: usage}
	}
	emit("response.created", respEvent{Response: base("in_progress", []any{}, nil)})
	emit("response.in_progress", respEvent{Response: base("in_progress", []any{}, nil)})
	if reply.Hang {
		s.hang(r)
		return
	}

	var item any
	if tc := reply.ToolCall; tc != nil {
		item = s.responsesToolCall(emit, n, tc)
	} else {
		item = responsesMessage(emit, n, reply.Text)
	}
	usage := &respUsage{
		InputTokens:         reply.InputTokens + reply.CacheReadTokens,
		InputTokensDetails:  respCached{CachedTokens: reply.CacheReadTokens},
		OutputTokens:        reply.OutputTokens,
		OutputTokensDetails: respReasoning{},
		TotalTokens:         reply.InputTokens + reply.CacheReadTokens + reply.OutputTokens,
	}
	emit("response.completed", respEvent{Response: base("completed", []any{item}, usage)})
}

// The Responses API's wire shapes, as far as the fake model writes them.
type (
	respErrorBody struct {
		Error respErrDesc `json:"error"`
	}
	// respErrDesc is an error; code and param are null.
	respErrDesc struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Param   any    `json:"param"`
	}
	respCached struct {
		CachedTokens int64 `json:"cached_tokens"`
	}
	respReasoning struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	}
	respUsage struct {
		InputTokens         int64         `json:"input_tokens"`
		InputTokensDetails  respCached    `json:"input_tokens_details"`
		OutputTokens        int64         `json:"output_tokens"`
		OutputTokensDetails respReasoning `json:"output_tokens_details"`
		TotalTokens         int64         `json:"total_tokens"`
	}
	// respObject is a response; error and incomplete_details are null.
	respObject struct {
		ID                string     `json:"id"`
		Object            string     `json:"object"`
		CreatedAt         int64      `json:"created_at"`
		Status            string     `json:"status"`
		Model             string     `json:"model"`
		Output            []any      `json:"output"`
		ParallelToolCalls bool       `json:"parallel_tool_calls"`
		ToolChoice        string     `json:"tool_choice"`
		Tools             []any      `json:"tools"`
		Error             any        `json:"error"`
		IncompleteDetails any        `json:"incomplete_details"`
		Usage             *respUsage `json:"usage,omitempty"`
	}
	respPart struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}
	respMessage struct {
		ID      string     `json:"id"`
		Type    string     `json:"type"`
		Status  string     `json:"status"`
		Role    string     `json:"role"`
		Content []respPart `json:"content"`
	}
	respFunctionCall struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	// respEvent is one streamed event: its type and sequence number, and
	// the members its type has.
	respEvent struct {
		Type           string      `json:"type"`
		SequenceNumber int         `json:"sequence_number"`
		Response       *respObject `json:"response,omitempty"`
		ItemID         string      `json:"item_id,omitempty"`
		OutputIndex    *int        `json:"output_index,omitempty"`
		ContentIndex   *int        `json:"content_index,omitempty"`
		Item           any         `json:"item,omitempty"`
		Part           *respPart   `json:"part,omitempty"`
		Delta          *string     `json:"delta,omitempty"`
		Text           *string     `json:"text,omitempty"`
		Arguments      *string     `json:"arguments,omitempty"`
		Logprobs       []any       `json:"logprobs,omitzero"`
	}
)

// zero is the index of the one output item and its one content part.
var zero = new(int)

// responsesMessage streams one assistant message item and returns it whole.
func responsesMessage(emit func(string, respEvent), n int64, text string) respMessage {
	itemID := fmt.Sprintf("msg_fake_%d", n)
	emit("response.output_item.added", respEvent{OutputIndex: zero, Item: respMessage{
		ID: itemID, Type: "message", Status: "in_progress", Role: "assistant", Content: []respPart{}}})
	emptyPart := respPart{Type: "output_text", Annotations: []any{}}
	emit("response.content_part.added", respEvent{ItemID: itemID, OutputIndex: zero, ContentIndex: zero, Part: &emptyPart})
	for _, chunk := range splitHalves(text) {
		emit("response.output_text.delta", respEvent{ItemID: itemID, OutputIndex: zero, ContentIndex: zero, Delta: &chunk, Logprobs: []any{}})
	}
	emit("response.output_text.done", respEvent{ItemID: itemID, OutputIndex: zero, ContentIndex: zero, Text: &text, Logprobs: []any{}})
	part := respPart{Type: "output_text", Text: text, Annotations: []any{}}
	emit("response.content_part.done", respEvent{ItemID: itemID, OutputIndex: zero, ContentIndex: zero, Part: &part})
	item := respMessage{ID: itemID, Type: "message", Status: "completed", Role: "assistant", Content: []respPart{part}}
	emit("response.output_item.done", respEvent{OutputIndex: zero, Item: item})
	return item
}

// responsesToolCall streams one function_call item and returns it whole.
func (s *Server) responsesToolCall(emit func(string, respEvent), n int64, tc *ToolCall) respFunctionCall {
	itemID := fmt.Sprintf("fc_fake_%d", n)
	callID := tc.ID
	if callID == "" {
		callID = fmt.Sprintf("call_fake_%d", n)
	}
	args := string(tc.Input)
	if args == "" {
		args = "{}"
	}
	emit("response.output_item.added", respEvent{OutputIndex: zero, Item: respFunctionCall{
		ID: itemID, Type: "function_call", Status: "in_progress", CallID: callID, Name: tc.Name}})
	emit("response.function_call_arguments.delta", respEvent{ItemID: itemID, OutputIndex: zero, Delta: &args})
	emit("response.function_call_arguments.done", respEvent{ItemID: itemID, OutputIndex: zero, Arguments: &args})
	item := respFunctionCall{ID: itemID, Type: "function_call", Status: "completed", CallID: callID, Name: tc.Name, Arguments: args}
	emit("response.output_item.done", respEvent{OutputIndex: zero, Item: item})
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

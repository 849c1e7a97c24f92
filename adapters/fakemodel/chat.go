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
	b, _ := json.Marshal(chatErrorBody{Error: chatErrDesc{Message: msg, Type: "fake_error", Code: status}})
	w.Write(b)
}

// chatToolCalls renders a scripted tool call in the Chat Completions shape.
func chatToolCalls(tc *ToolCall, withIndex bool) []chatToolCall {
	args := string(tc.Input)
	if args == "" {
		args = "{}"
	}
	id := tc.ID
	if id == "" {
		id = "call_fake_1"
	}
	call := chatToolCall{ID: id, Type: "function", Function: chatFunction{Name: tc.Name, Arguments: args}}
	if withIndex {
		call.Index = new(int)
	}
	return []chatToolCall{call}
}

// The Chat Completions API's wire shapes, as far as the fake model writes
// them.
type (
	chatErrorBody struct {
		Error chatErrDesc `json:"error"`
	}
	chatErrDesc struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	}
	chatFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	chatToolCall struct {
		Index    *int         `json:"index,omitempty"`
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function chatFunction `json:"function"`
	}
	// chatMessage is a whole answer: content is null when it calls a tool.
	chatMessage struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
	}
	chatDelta struct {
		Role      string         `json:"role,omitempty"`
		Content   *string        `json:"content,omitempty"`
		ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
	}
	chatChoice struct {
		Index        int          `json:"index"`
		Message      *chatMessage `json:"message,omitempty"`
		Delta        *chatDelta   `json:"delta,omitempty"`
		FinishReason *string      `json:"finish_reason"`
	}
	chatUsage struct {
		PromptTokens        int64             `json:"prompt_tokens"`
		CompletionTokens    int64             `json:"completion_tokens"`
		TotalTokens         int64             `json:"total_tokens"`
		PromptTokensDetails *chatCachedTokens `json:"prompt_tokens_details,omitempty"`
	}
	chatCachedTokens struct {
		CachedTokens int64 `json:"cached_tokens"`
	}
	// chatCompletion is a chat.completion or one chat.completion.chunk.
	chatCompletion struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []chatChoice `json:"choices"`
		Usage   *chatUsage   `json:"usage,omitempty"`
	}
)

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
	usage := &chatUsage{PromptTokens: reply.InputTokens + reply.CacheReadTokens, CompletionTokens: reply.OutputTokens,
		TotalTokens: reply.InputTokens + reply.CacheReadTokens + reply.OutputTokens}
	if reply.CacheReadTokens > 0 {
		// Cache hits are counted within prompt_tokens, as OpenAI and
		// DeepSeek count them.
		usage.PromptTokensDetails = &chatCachedTokens{CachedTokens: reply.CacheReadTokens}
	}
	if !req.Stream {
		msg := &chatMessage{Role: "assistant", Content: &reply.Text}
		if reply.ToolCall != nil {
			msg.Content = nil
			msg.ToolCalls = chatToolCalls(reply.ToolCall, false)
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(chatCompletion{ID: id, Object: "chat.completion", Created: created, Model: model,
			Choices: []chatChoice{{Message: msg, FinishReason: &finish}}, Usage: usage})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	chunk := func(delta chatDelta, finishReason *string) chatCompletion {
		return chatCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []chatChoice{{Delta: &delta, FinishReason: finishReason}}}
	}
	empty := ""
	sse(w, "", chunk(chatDelta{Role: "assistant", Content: &empty}, nil))
	if reply.ToolCall != nil {
		sse(w, "", chunk(chatDelta{ToolCalls: chatToolCalls(reply.ToolCall, true)}, nil))
	} else {
		for _, piece := range chatSplitText(reply.Text) {
			sse(w, "", chunk(chatDelta{Content: &piece}, nil))
		}
	}
	sse(w, "", chunk(chatDelta{}, &finish))
	sse(w, "", chatCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
		Choices: []chatChoice{}, Usage: usage})
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

// Package fakemodel is a scripted model server on 127.0.0.1 that speaks the
// three provider APIs the real harness programs call: Anthropic Messages
// (Claude Code, ACP agents), OpenAI Responses (Codex) and OpenAI Chat
// Completions (OpenCode). End-to-end tests point the real harnesses at it.
//
// Call Start, point the harness at URL, then script replies with Enqueue or
// Responder and read what the harness sent with Requests.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Reply is one scripted model answer.
type Reply struct {
	// Text is the assistant text to stream.
	Text string
	// InputTokens is the usage reported for the request (0: the server's
	// current default, see SetInputTokens).
	InputTokens int64
	// OutputTokens is the output usage reported (0: a small count).
	OutputTokens int64
	// CacheReadTokens and CacheWriteTokens are the prompt-cache usage
	// reported (Anthropic cache_read_input_tokens and
	// cache_creation_input_tokens; OpenAI Responses cached_tokens and Chat
	// Completions prompt_tokens_details.cached_tokens, counted within the
	// input tokens as those APIs do, and no cache writes).
	CacheReadTokens  int64
	CacheWriteTokens int64
	// Hang keeps the response open without an answer until the client goes
	// away or the server closes.
	Hang bool
	// Status, when non-zero, answers with this HTTP status and an error body.
	Status int
	// ErrorMessage is that error body's message on the Chat Completions
	// API (default: one naming the scripted status), such as a provider's
	// context-window wording.
	ErrorMessage string
	// ToolCall, when set, makes the model call a tool instead of answering.
	ToolCall *ToolCall
}

// ToolCall is a scripted tool use.
type ToolCall struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// Request is one request the server received.
type Request struct {
	API  string          `json:"api"` // "anthropic", "responses", "chat"
	Path string          `json:"path"`
	Body json.RawMessage `json:"body"`
	// LastUserText is the text of the last user message (the API's own
	// shape, flattened), used to tell a summarisation request from a turn.
	LastUserText string    `json:"lastUserText"`
	Time         time.Time `json:"time"`
	// Reported is the usage the answer reported (zero for an error or a
	// hanging answer).
	Reported Usage `json:"reported"`
}

// Usage is what the server reported for one request, in the four parts
// the usage ledger keeps: input not read from the cache, output, cache
// reads and cache writes.
type Usage struct {
	InputTokens      int64 `json:"inputTokens"`
	OutputTokens     int64 `json:"outputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
}

// IsSummaryRequest reports whether r looks like a harness's own compaction
// (summarisation) request.
func (r Request) IsSummaryRequest() bool {
	t := strings.ToLower(r.LastUserText)
	return strings.Contains(t, "summar") || strings.Contains(t, "checkpoint compaction")
}

// Server is a running fake model server.
type Server struct {
	// URL is the base URL, http://127.0.0.1:PORT.
	URL string

	mu          sync.Mutex
	queue       []Reply
	responder   func(Request) (Reply, bool)
	requests    []Request
	inputTokens int64
	srv         *http.Server
	ln          net.Listener
	closed      chan struct{}
}

// Start listens on 127.0.0.1 on a free port and serves until Close.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln, inputTokens: 1200, closed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", s.anthropicMessages)
	mux.HandleFunc("/v1/messages/count_tokens", s.anthropicCountTokens)
	mux.HandleFunc("/v1/responses", s.openaiResponses)
	mux.HandleFunc("/v1/chat/completions", s.openaiChat)
	mux.HandleFunc("/v1/models", s.models)
	mux.HandleFunc("/_control/input_tokens", s.controlInputTokens)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server and releases hanging responses.
func (s *Server) Close() error {
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	return s.srv.Close()
}

// Enqueue adds replies answered in order to non-summary and summary
// requests alike, before the Responder and the default answer.
func (s *Server) Enqueue(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, r...)
}

// Responder sets a function consulted when the queue is empty; it returns
// false to fall through to the default answer.
func (s *Server) Responder(f func(Request) (Reply, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = f
}

// SetInputTokens sets the input token usage reported by default.
func (s *Server) SetInputTokens(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inputTokens = n
}

// Requests returns a copy of every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// record logs req and picks its reply: the queue, then the responder, then a
// default ("<summary>…</summary>" for summary requests, "OK" otherwise).
func (s *Server) record(req Request) Reply {
	req.Time = time.Now()
	s.mu.Lock()
	s.requests = append(s.requests, req)
	at := len(s.requests) - 1
	var r Reply
	picked := false
	if len(s.queue) > 0 {
		r, s.queue, picked = s.queue[0], s.queue[1:], true
	}
	resp := s.responder
	def := s.inputTokens
	s.mu.Unlock()
	if !picked && resp != nil {
		r, picked = resp(req)
	}
	if !picked {
		if req.IsSummaryRequest() {
			r = Reply{Text: "<summary>The user asked for a small change; it was made and tested.</summary>"}
		} else {
			r = Reply{Text: "OK"}
		}
	}
	if r.InputTokens == 0 {
		r.InputTokens = def
	}
	if r.OutputTokens == 0 {
		r.OutputTokens = int64(len(r.Text)/4 + 1)
	}
	if !r.Hang && (r.Status == 0 || r.Status == 200) {
		s.mu.Lock()
		u := Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
		switch req.API {
		case "anthropic":
			u.CacheReadTokens, u.CacheWriteTokens = r.CacheReadTokens, r.CacheWriteTokens
		case "responses", "chat":
			u.CacheReadTokens = r.CacheReadTokens
		}
		s.requests[at].Reported = u
		s.mu.Unlock()
	}
	return r
}

// hang blocks until the client leaves or the server closes.
func (s *Server) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closed:
	}
}

func (s *Server) controlInputTokens(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	if err != nil {
		http.Error(w, "n must be an integer", http.StatusBadRequest)
		return
	}
	s.SetInputTokens(n)
	fmt.Fprintln(w, "ok")
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model","type":"model","display_name":"Fake model"}]}`)
}

// readBody reads a JSON request body.
func readBody(r *http.Request) (json.RawMessage, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("request body is not JSON")
	}
	return b, nil
}

// sse writes one server-sent event and flushes.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// messagesRequest is the part of an Anthropic Messages or OpenAI Chat
// Completions request the fake reads: both carry role/content messages.
type messagesRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// lastUserText flattens the last user message: a string content is the
// text; an array of {type:"text", text} blocks gives the last text block
// (Anthropic, where Claude Code puts reminders in earlier blocks) or all of
// them joined by newlines (Chat Completions). For Chat Completions
// (!lastBlockOnly) the user messages directly before the last one are
// joined in front of it: DeepSeek Harness sends the user's text and then a
// separate "Current runtime context" user message in the same turn.
func lastUserText(req messagesRequest, lastBlockOnly bool) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role != "user" {
			continue
		}
		if lastBlockOnly {
			return messageText(req.Messages[i].Content, true)
		}
		first := i
		for first > 0 && req.Messages[first-1].Role == "user" {
			first--
		}
		var parts []string
		for _, m := range req.Messages[first : i+1] {
			if t := messageText(m.Content, false); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// messageText flattens one message's content (see lastUserText).
func messageText(content json.RawMessage, lastBlockOnly bool) string {
	var s string
	if err := json.Unmarshal(content, &s); err == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(content, &blocks); err != nil {
		return ""
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	if len(texts) == 0 {
		return ""
	}
	if lastBlockOnly {
		return texts[len(texts)-1]
	}
	return strings.Join(texts, "\n")
}

// Package dshtest is a fake DSH web server for tests: it serves DSH
// 0.1.0-rc.8's web RPC (POST /api/<ns>.<method> and the typed remotes
// /api/commands/<method>, client-request envelopes) on 127.0.0.1.
//
// Static answers (workspace.list, agentPreset.list, session.models,
// commands/list) are replayed from the recorded calls in
// testdata/dsh/web-rpc-calls.jsonl; the rest keeps minimal state shaped like
// the recordings: sessions with a persistence event log (seqs, turns,
// user/assistant messages, session titles), asynchronous prompt turns with
// a scripted reply, goals with revisions (goal rounds that block the goal
// and move its revision on, GOAL_STALE_REVISION and GOAL_ALREADY_EXISTS
// exactly as DSH words them), and /compact writing the compaction bracket
// with a positional replace. Routes rc.8 does not serve
// (session.historyWindow) answer HTTP 404.
package dshtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configures a Server.
type Options struct {
	// Replay is the recorded calls file (default: the repository's
	// testdata/dsh/web-rpc-calls.jsonl).
	Replay string
	// Reply scripts the model's answer to a user text (default: DSH's
	// fake-model form `FAKE-REPLY-n: scripted answer to "<text>"`).
	Reply func(text string) string
	// TurnDelay is how long a turn takes before its events land
	// (default 5ms), so clients must follow the turn asynchronously.
	TurnDelay time.Duration
	// HoldTurns keeps every turn open until session.cancel ends it.
	HoldTurns bool
	// HistoryWindow serves session.historyWindow (a later DSH's one-read
	// window: the newest maxMessages messages), which rc.8 does not.
	HistoryWindow bool
	// CompactFails makes /compact fail with one of DSH's manual compaction
	// failure codes (busy, changed, summary, commit, persistence): the
	// server writes what DSH 0.1.0-rc.8 writes for it and answers with its
	// /compact command's text for that code.
	CompactFails string
	// StalePauses is how many goal.pause calls find the goal moved on by a
	// round first (its revision bumped), whatever the goal's state.
	StalePauses int
}

// Call is one RPC the server answered.
type Call struct {
	Method  string
	RPCID   string
	Payload json.RawMessage
	OK      bool
	Code    string // error code or details.goalCode when !OK
}

// Server is a running fake DSH web server.
type Server struct {
	// URL is the RPC root, http://127.0.0.1:P/api.
	URL string

	opts   Options
	srv    *httptest.Server
	replay map[string]json.RawMessage

	mu       sync.Mutex
	sessions map[string]*session
	order    []string
	archived []string
	calls    []Call
	n        int
	stale    int
}

// Start starts a server closed when t ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatalf("dshtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// New starts a server on 127.0.0.1.
func New(opts Options) (*Server, error) {
	if opts.Replay == "" {
		_, file, _, _ := runtime.Caller(0)
		opts.Replay = filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "dsh", "web-rpc-calls.jsonl")
	}
	if opts.TurnDelay <= 0 {
		opts.TurnDelay = 5 * time.Millisecond
	}
	replay, err := loadReplay(opts.Replay)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, replay: replay, sessions: map[string]*session{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/api"
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// loadReplay reads the recorded calls and keeps the first successful value
// of each method.
func loadReplay(path string) (map[string]json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay file: %w", err)
	}
	defer f.Close()
	out := map[string]json.RawMessage{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var c struct {
			Request struct {
				Method string `json:"method"`
			} `json:"request"`
			Response struct {
				Result struct {
					OK    bool            `json:"ok"`
					Value json.RawMessage `json:"value"`
				} `json:"result"`
			} `json:"response"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("replay file %s: %w", path, err)
		}
		if _, ok := out[c.Request.Method]; !ok && c.Response.Result.OK {
			out[c.Request.Method] = c.Response.Result.Value
		}
	}
	for _, m := range []string{"workspace.list", "agentPreset.list", "session.models", "commands/list"} {
		if out[m] == nil {
			return nil, fmt.Errorf("replay file %s has no successful %s", path, m)
		}
	}
	return out, sc.Err()
}

// Calls returns the calls answered so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// rpcError is an {ok:false} answer.
type rpcError struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	GoalCode string `json:"-"`
}

func errf(code, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/api/")
	if !ok || r.Method != http.MethodPost {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, `{"error":"content-type must be application/json"}`, http.StatusUnsupportedMediaType)
		return
	}
	var req struct {
		Type    string          `json:"type"`
		RPCID   string          `json:"rpcId"`
		Method  string          `json:"method"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Type != "client-request" {
		http.Error(w, `{"error":"bad envelope"}`, http.StatusBadRequest)
		return
	}
	h, known := s.handlers()[method]
	if !known {
		http.Error(w, `{"error":"unknown route"}`, http.StatusNotFound)
		return
	}
	if len(req.Payload) == 0 || string(req.Payload) == "null" {
		req.Payload = json.RawMessage("{}")
	}
	var value any
	rerr := validate(method, req.Payload)
	if rerr == nil {
		value, rerr = h(req.RPCID, req.Payload)
	}
	result := rpcResult{OK: rerr == nil}
	call := Call{Method: method, RPCID: req.RPCID, Payload: req.Payload, OK: rerr == nil}
	if rerr != nil {
		result.Error = &errorBody{Code: rerr.Code, Message: rerr.Message}
		call.Code = rerr.Code
		if rerr.GoalCode != "" {
			result.Error.Details = &errorDetails{GoalCode: rerr.GoalCode}
			call.Code = rerr.GoalCode
		}
	} else {
		result.Value = value
		if value == nil {
			result.Value = json.RawMessage("null")
		}
	}
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(envelope{Type: "server-response", RPCID: req.RPCID, Result: result})
}

type handler func(rpcID string, payload json.RawMessage) (any, *rpcError)

func (s *Server) handlers() map[string]handler {
	hs := s.routes()
	if s.opts.HistoryWindow {
		hs["session.historyWindow"] = s.sessionHistory
	}
	return hs
}

func (s *Server) routes() map[string]handler {
	return map[string]handler{
		"session.list":             s.sessionList,
		"session.create":           s.sessionCreate,
		"session.history":          s.sessionHistory,
		"session.models":           s.sessionModels,
		"session.selectModel":      s.sessionSelectModel,
		"session.prompt":           s.sessionPrompt,
		"session.cancel":           s.sessionCancel,
		"session.rename":           s.sessionRename,
		"session.attachment":       s.sessionAttachment,
		"workspace.list":           s.workspaceList,
		"workspace.archiveSession": s.workspaceArchive,
		"agentPreset.list":         func(string, json.RawMessage) (any, *rpcError) { return s.replay["agentPreset.list"], nil },
		"goal.create":              s.goalCreate,
		"goal.pause":               s.goalPause,
		"goal.clear":               s.goalClear,
		"host.describe":            s.hostDescribe,
		"llm.models":               s.llmModels,
		"commands/list":            s.commandsList,
		"commands/execute":         s.commandsExecute,
	}
}

// validate refuses, as DSH's schemas do before any handler runs, a payload
// whose string fields are not strings ("bad-request").
func validate(method string, payload json.RawMessage) *rpcError {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil {
		return errf("bad-request", "invalid payload for %s", method)
	}
	for _, k := range []string{"sessionId", "cwd", "agentPreset", "objective", "title"} {
		if v, ok := fields[k]; ok && (len(v) == 0 || v[0] != '"') {
			return errf("bad-request", "invalid payload for %s", method)
		}
	}
	return nil
}

// hostDescribe answers host.describe as rc.8 does (its web host API
// reports version 0.0.1).
func (s *Server) hostDescribe(string, json.RawMessage) (any, *rpcError) {
	s.mu.Lock()
	n := len(s.sessions)
	s.mu.Unlock()
	return hostDescription{Version: "0.0.1", Cwd: "/", Provider: "deepseek-official", Model: "deepseek-v4-flash",
		AttachedSessions: n, Home: "/", CanOpenPath: false}, nil
}

// llmModels answers llm.models with the catalog session.models replays.
func (s *Server) llmModels(string, json.RawMessage) (any, *rpcError) {
	var v map[string]json.RawMessage
	_ = json.Unmarshal(s.replay["session.models"], &v)
	return llmModelsValue{Groups: v["groups"], Failures: []json.RawMessage{}}, nil
}

// decode reads a payload into v.
func decode(payload json.RawMessage, v any) *rpcError {
	if err := json.Unmarshal(payload, v); err != nil {
		return errf("invalid-argument", "invalid payload: %v", err)
	}
	return nil
}

func (s *Server) workspaceList(string, json.RawMessage) (any, *rpcError) {
	var v map[string]any
	_ = json.Unmarshal(s.replay["workspace.list"], &v)
	s.mu.Lock()
	v["archivedSessionIds"] = append([]string{}, s.archived...)
	s.mu.Unlock()
	return v, nil
}

func (s *Server) commandsList(_ string, payload json.RawMessage) (any, *rpcError) {
	var p struct {
		Args struct {
			AgentID string `json:"agentId"`
		} `json:"args"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if _, e := s.get(p.Args.AgentID); e != nil {
		return nil, e
	}
	return s.replay["commands/list"], nil
}

func now() int64 { return time.Now().UnixMilli() }

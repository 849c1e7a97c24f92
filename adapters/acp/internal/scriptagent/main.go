// Command scriptagent is a small scripted ACP agent for the acp adapter's
// tests. It speaks newline-delimited JSON-RPC 2.0 on stdio and answers
// initialize, session/new, session/load, session/list, session/set_model,
// session/set_mode,
// session/prompt, session/cancel and, with SCRIPTAGENT_FORK=1,
// session/fork.
//
// Prompts are scripts, one directive per line (other lines are ignored):
//
//	say TEXT        reply TEXT (default: "scripted reply: <first line>")
//	usage N         report N tokens in context after the turn
//	tool NAME       run a tool call NAME (tool_call, then completed)
//	permission      ask session/request_permission and say the outcome
//	update JSON     send JSON as a session/update's update object
//	garbage         write a line that is not JSON-RPC
//	hang            wait for session/cancel, then stop with "cancelled"
//	crash           print to stderr and exit with code 3
//	pid             reply "pid N", N being the agent's process id
//
// A prompt containing "Bridge checkpoint request" is answered with a JSON
// checkpoint object. After every turn a usage_update {used, size} is sent.
//
// Environment: SCRIPTAGENT_STATE, a directory where sessions are kept so a
// new process can load them (default: a temporary directory);
// SCRIPTAGENT_WINDOW, the context size (default 100000); SCRIPTAGENT_COMPACT=1
// to advertise a compact command (input hint) that sends compaction_update
// when the client advertised the compaction capability; SCRIPTAGENT_FORK=1
// to advertise sessionCapabilities.fork and answer session/fork with a
// copy of the stored session under a new id.
package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

type turn struct {
	User      string `json:"user"`
	Assistant string `json:"assistant"`
}

type session struct {
	ID        string    `json:"id"`
	Cwd       string    `json:"cwd"`
	Used      int64     `json:"used"`
	Model     string    `json:"model"`
	Turns     []turn    `json:"turns"`
	UpdatedAt time.Time `json:"updatedAt"`
}

type agent struct {
	out       *bufio.Writer
	wmu       sync.Mutex
	state     string
	window    int64
	compact   bool
	fork      bool
	clientCmp bool

	mu       sync.Mutex
	sessions map[string]*session
	cancel   map[string]chan struct{}
	pending  map[string]chan message
	nextID   int
}

func main() {
	state := os.Getenv("SCRIPTAGENT_STATE")
	if state == "" {
		state, _ = os.MkdirTemp("", "scriptagent")
	}
	window := int64(100000)
	if w, err := strconv.ParseInt(os.Getenv("SCRIPTAGENT_WINDOW"), 10, 64); err == nil {
		window = w
	}
	a := &agent{out: bufio.NewWriter(os.Stdout), state: state, window: window,
		compact: os.Getenv("SCRIPTAGENT_COMPACT") == "1", fork: os.Getenv("SCRIPTAGENT_FORK") == "1",
		sessions: map[string]*session{}, cancel: map[string]chan struct{}{}, pending: map[string]chan message{}}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var m message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				fmt.Fprintf(os.Stderr, "scriptagent: bad line: %v\n", jerr)
			} else {
				a.handle(m)
			}
		}
		if err != nil {
			return
		}
	}
}

func (a *agent) send(v any) {
	b, _ := json.Marshal(v)
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.out.Write(b)
	a.out.WriteByte('\n')
	a.out.Flush()
}

func (a *agent) reply(id json.RawMessage, result any) {
	a.send(response{JSONRPC: "2.0", ID: id, Result: result})
}

func (a *agent) fail(id json.RawMessage, code int, msg string) {
	a.send(errorResponse{JSONRPC: "2.0", ID: id, Error: rpcError{Code: code, Message: msg}})
}

func (a *agent) update(sid string, u any) {
	a.send(notification{JSONRPC: "2.0", Method: "session/update", Params: updateParams{SessionID: sid, Update: u}})
}

// resolve hands a response to the request of ours that awaits it.
func (a *agent) resolve(m message) {
	a.mu.Lock()
	ch := a.pending[string(m.ID)]
	delete(a.pending, string(m.ID))
	a.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

func (a *agent) handle(m message) {
	if m.Method == "" { // a response to one of our requests
		a.resolve(m)
		return
	}
	var p struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
		ModelID   string `json:"modelId"`
		Prompt    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"prompt"`
		ClientCapabilities struct {
			Session struct {
				Compaction json.RawMessage `json:"compaction"`
			} `json:"session"`
		} `json:"clientCapabilities"`
	}
	_ = json.Unmarshal(m.Params, &p)
	switch m.Method {
	case "initialize":
		a.clientCmp = len(p.ClientCapabilities.Session.Compaction) > 0 && string(p.ClientCapabilities.Session.Compaction) != "null"
		a.reply(m.ID, initializeResult{ProtocolVersion: 1,
			AgentCapabilities: agentCapabilities{LoadSession: true, SessionCapabilities: a.sessionCaps()},
			AgentInfo:         agentInfo{Name: "bridge-scriptagent", Title: "Bridge script agent", Version: "1.0.0"},
			AuthMethods:       []struct{}{}})
	case "session/new":
		s := &session{ID: newID(), Cwd: p.Cwd, Model: "scripted-small"}
		a.save(s)
		a.reply(m.ID, newSessionResult{SessionID: s.ID, Models: a.models(s), Modes: defaultModes})
		a.commands(s.ID)
	case "session/load":
		s := a.load(p.SessionID)
		if s == nil {
			a.fail(m.ID, -32002, "Resource not found: no session "+p.SessionID)
			return
		}
		for _, t := range s.Turns {
			a.update(s.ID, chunkUpdate{SessionUpdate: "user_message_chunk", Content: block(t.User)})
			a.update(s.ID, chunkUpdate{SessionUpdate: "agent_message_chunk", Content: block(t.Assistant)})
		}
		a.reply(m.ID, loadSessionResult{Models: a.models(s)})
		a.commands(s.ID)
	case "session/fork":
		s := a.load(p.SessionID)
		if !a.fork || s == nil {
			a.fail(m.ID, -32002, "Resource not found: no session "+p.SessionID)
			return
		}
		c := &session{ID: newID(), Cwd: p.Cwd, Model: s.Model, Used: s.Used, Turns: append([]turn(nil), s.Turns...)}
		a.save(c)
		a.reply(m.ID, newSessionResult{SessionID: c.ID, Models: a.models(c), Modes: defaultModes})
	case "session/list":
		a.reply(m.ID, listResult{Sessions: a.list(p.Cwd)})
	case "session/set_model":
		s := a.load(p.SessionID)
		if s == nil {
			a.fail(m.ID, -32002, "Resource not found: no session "+p.SessionID)
			return
		}
		s.Model = p.ModelID
		a.save(s)
		a.reply(m.ID, struct{}{})
	case "session/set_mode":
		var mp struct {
			ModeID string `json:"modeId"`
		}
		_ = json.Unmarshal(m.Params, &mp)
		a.update(p.SessionID, modeUpdate{SessionUpdate: "current_mode_update", CurrentModeID: mp.ModeID})
		a.reply(m.ID, struct{}{})
	case "session/cancel":
		a.mu.Lock()
		if ch := a.cancel[p.SessionID]; ch != nil {
			close(ch)
			delete(a.cancel, p.SessionID)
		}
		a.mu.Unlock()
	case "session/prompt":
		s := a.load(p.SessionID)
		if s == nil {
			a.fail(m.ID, -32002, "Resource not found: no session "+p.SessionID)
			return
		}
		var text strings.Builder
		for _, b := range p.Prompt {
			text.WriteString(b.Text)
		}
		go a.prompt(m.ID, s, text.String())
	default:
		if len(m.ID) > 0 {
			a.fail(m.ID, -32601, "Method not found: "+m.Method)
		}
	}
}

// newID returns a new session id.
func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "sa-" + hex.EncodeToString(b)
}

// defaultModes are the modes every session offers.
var defaultModes = modes{CurrentModeID: "default", AvailableModes: []mode{{ID: "default", Name: "Default"}, {ID: "plan", Name: "Plan"}}}

func (a *agent) models(s *session) models {
	return models{CurrentModelID: s.Model, AvailableModels: []model{
		{ModelID: "scripted-small", Name: "Scripted small"},
		{ModelID: "scripted-large", Name: "Scripted large"}}}
}

func (a *agent) commands(sid string) {
	cmds := []command{{Name: "help", Description: "Show help"}}
	if a.compact {
		cmds = append(cmds, command{Name: "compact", Description: "Compact the conversation",
			Input: &commandInput{Hint: "optional focus for the summary"}})
	}
	a.update(sid, commandsUpdate{SessionUpdate: "available_commands_update", AvailableCommands: cmds})
}

func (a *agent) path(id string) string { return filepath.Join(a.state, filepath.Base(id)+".json") }

func (a *agent) save(s *session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s.UpdatedAt = time.Now().UTC()
	a.sessions[s.ID] = s
	b, _ := json.Marshal(s)
	_ = os.WriteFile(a.path(s.ID), b, 0o600)
}

func (a *agent) load(id string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[id]; s != nil {
		return s
	}
	b, err := os.ReadFile(a.path(id))
	if err != nil || id == "" {
		return nil
	}
	var s session
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	a.sessions[id] = &s
	return &s
}

func (a *agent) list(cwd string) []sessionInfo {
	files, _ := filepath.Glob(filepath.Join(a.state, "*.json"))
	out := []sessionInfo{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		var s session
		if err != nil || json.Unmarshal(b, &s) != nil || (cwd != "" && s.Cwd != cwd) {
			continue
		}
		out = append(out, sessionInfo{SessionID: s.ID, Cwd: s.Cwd, Title: "session " + s.ID,
			UpdatedAt: s.UpdatedAt.Format(time.RFC3339)})
	}
	return out
}

// ask sends a request to the client and waits for its response.
func (a *agent) ask(method string, params any) message {
	a.mu.Lock()
	a.nextID++
	id := strconv.Itoa(a.nextID)
	ch := make(chan message, 1)
	a.pending[id] = ch
	a.mu.Unlock()
	a.send(request{JSONRPC: "2.0", ID: a.nextID, Method: method, Params: params})
	return <-ch
}

func (a *agent) prompt(id json.RawMessage, s *session, text string) {
	if strings.HasPrefix(text, "/compact") && a.compact {
		a.compactNow(id, s, strings.TrimSpace(strings.TrimPrefix(text, "/compact")))
		return
	}
	reply := ""
	setUsage := int64(-1)
	first := strings.SplitN(text, "\n", 2)[0]
	if len(first) > 60 {
		first = first[:60]
	}
	stop := "end_turn"
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		verb, arg, _ := strings.Cut(line, " ")
		switch verb {
		case "say":
			reply = arg
		case "usage":
			if n, err := strconv.ParseInt(arg, 10, 64); err == nil {
				setUsage = n
			}
		case "tool":
			tid := fmt.Sprintf("tool-%d-%s", len(s.Turns), arg)
			a.update(s.ID, toolCall{SessionUpdate: "tool_call", ToolCallID: tid, Title: arg, Kind: "read", Status: "pending", RawInput: toolCallInput{Name: arg}})
			a.update(s.ID, toolCallUpdate{SessionUpdate: "tool_call_update", ToolCallID: tid, Status: "in_progress"})
			a.update(s.ID, toolCallUpdate{SessionUpdate: "tool_call_update", ToolCallID: tid, Status: "completed", RawOutput: &toolCallOutput{OK: true}})
		case "permission":
			resp := a.ask("session/request_permission", permissionRequest{SessionID: s.ID,
				ToolCall: permissionToolCall{ToolCallID: "perm-1", Title: "write a file"},
				Options: []permissionOption{
					{OptionID: "allow", Name: "Allow", Kind: "allow_once"},
					{OptionID: "deny", Name: "Deny", Kind: "reject_once"}}})
			reply = "permission outcome: " + string(resp.Result)
		case "update":
			a.send(json.RawMessage(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":` + strconv.Quote(s.ID) + `,"update":` + arg + `}}`))
		case "garbage":
			a.wmu.Lock()
			a.out.WriteString("this is not json-rpc\n")
			a.out.Flush()
			a.wmu.Unlock()
		case "hang":
			ch := make(chan struct{})
			a.mu.Lock()
			a.cancel[s.ID] = ch
			a.mu.Unlock()
			<-ch
			stop = "cancelled"
		case "crash":
			fmt.Fprintln(os.Stderr, "scriptagent: crashing on request")
			os.Exit(3)
		case "pid":
			reply = "pid " + strconv.Itoa(os.Getpid())
		}
	}
	if strings.Contains(text, "Bridge checkpoint request") {
		reply = `Here is the checkpoint: {"summary": "scripted checkpoint: the user ran scripted turns", "decisions": ["keep the scripted agent small"], "filesTouched": [], "openWork": ["nothing"]}`
	}
	if reply == "" {
		reply = "scripted reply: " + first
	}
	if stop == "end_turn" {
		for i := 0; i < len(reply); i += 16 {
			a.update(s.ID, chunkUpdate{SessionUpdate: "agent_message_chunk", Content: block(reply[i:min(i+16, len(reply))])})
		}
	}
	if setUsage >= 0 {
		s.Used = setUsage
	} else {
		s.Used += int64(len(text)+len(reply))/4 + 100
	}
	s.Turns = append(s.Turns, turn{User: text, Assistant: reply})
	a.save(s)
	a.update(s.ID, usageUpdate{SessionUpdate: "usage_update", Used: s.Used, Size: a.window})
	a.reply(id, promptResult{StopReason: stop})
}

func (a *agent) compactNow(id json.RawMessage, s *session, focus string) {
	summary := "scripted compaction summary"
	if focus != "" {
		summary += " focused on " + focus
	}
	if a.clientCmp {
		cid := fmt.Sprintf("cmp-%d", len(s.Turns))
		a.update(s.ID, compactionUpdate{SessionUpdate: "compaction_update", CompactionID: cid, Status: "in_progress"})
		a.update(s.ID, compactionChunk{SessionUpdate: "compaction_summary_chunk", CompactionID: cid, Content: block(summary)})
		a.update(s.ID, compactionUpdate{SessionUpdate: "compaction_update", CompactionID: cid, Status: "completed",
			Summary: []textBlock{block(summary)}})
	}
	s.Used = s.Used/4 + 50
	s.Turns = []turn{{User: "(compacted)", Assistant: summary}}
	a.save(s)
	a.update(s.ID, usageUpdate{SessionUpdate: "usage_update", Used: s.Used, Size: a.window})
	a.reply(id, promptResult{StopReason: "end_turn"})
}

// sessionCaps is the agent's sessionCapabilities: list, with
// SCRIPTAGENT_COMPACT=1 the unstable compaction contract, and with
// SCRIPTAGENT_FORK=1 the unstable session/fork.
func (a *agent) sessionCaps() sessionCapabilities {
	var c sessionCapabilities
	if a.compact {
		c.Compaction = &struct{}{}
	}
	if a.fork {
		c.Fork = &struct{}{}
	}
	return c
}

package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// backend is a schema.Backend whose few methods these tests need answer
// from memory; any other call panics (and the server turns the panic into
// an internal error of that request).
type backend struct {
	schema.Backend
	mu      sync.Mutex
	created int
	prompts []schema.SessionPromptParams
	block   chan struct{} // when set, SessionPrompt waits for it
}

func (b *backend) SessionCreate(ctx context.Context, p schema.SessionCreateParams) (schema.SessionCreateResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.created++
	return schema.SessionCreateResult{SessionID: "s_1", Harness: p.Harness}, nil
}

func (b *backend) SessionModels(ctx context.Context, p schema.SessionModelsParams) (schema.SessionModelsResult, error) {
	return schema.SessionModelsResult{}, core.Errorf(core.CodeUnsupported, "no models")
}

func (b *backend) SessionPrompt(ctx context.Context, p schema.SessionPromptParams) (schema.SessionPromptResult, error) {
	b.mu.Lock()
	b.prompts = append(b.prompts, p)
	block := b.block
	b.mu.Unlock()
	if block != nil {
		<-block
	}
	return schema.SessionPromptResult{StopReason: "end_turn"}, nil
}

// SessionUsage is a ledger that grows by one report (100 tokens in, 10
// out, 5 read from the cache) per prompt answered.
func (b *backend) SessionUsage(ctx context.Context, p schema.SessionUsageParams) (schema.SessionUsageResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := int64(len(b.prompts))
	if b.block != nil {
		n-- // the prompt now running has not reported yet
	}
	return schema.SessionUsageResult{Total: schema.UsageGroup{Reports: n, InputTokens: 100 * n, OutputTokens: 10 * n, CacheReadTokens: 5 * n}}, nil
}

func (b *backend) SessionHistory(ctx context.Context, p schema.SessionHistoryParams) (schema.SessionHistoryResult, error) {
	return schema.SessionHistoryResult{}, core.E(core.CodeNotFound, "session "+p.SessionID+" not found", core.ErrNotFound)
}

// run serves input (one message a line) to the end and returns every line
// the server wrote, parsed.
func run(t *testing.T, b schema.Backend, input string) []message {
	t.Helper()
	var out strings.Builder
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	s := New(w, Options{Harness: "fake", Version: "test"})
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), strings.NewReader(input), b) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return after its input ended")
	}
	var msgs []message
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("the server wrote a line that is not JSON: %q", sc.Text())
		}
		msgs = append(msgs, m)
	}
	return msgs
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var _ io.Writer = writerFunc(nil)

func reply(t *testing.T, msgs []message, id string) message {
	t.Helper()
	for _, m := range msgs {
		if m.Method == "" && string(m.ID) == id {
			return m
		}
	}
	t.Fatalf("no reply to request %s in %+v", id, msgs)
	return message{}
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"

// Bad input gets a specific error and the connection goes on: malformed
// JSON (-32700), an unknown method (-32601), params that do not fit
// (-32602 naming the problem), a request before initialize, audio (not
// offered), a relative cwd, a session that does not exist (ACP's -32002);
// a panicking backend fails its request only.
func TestBadInputIsAnsweredAndServingGoesOn(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/tmp"}}` + "\n" +
		initLine +
		`{"jsonrpc":"2.0","id":2,"method":` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"textDocument/hover","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s_1","prompt":"hello"}}` + "\n" +
		`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s_1","prompt":[{"type":"audio","data":"AA==","mimeType":"audio/wav"}]}}` + "\n" +
		`{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}` + "\n" +
		`{"jsonrpc":"2.0","id":7,"method":"session/load","params":{"sessionId":"s_nope","cwd":"/tmp","mcpServers":[]}}` + "\n" +
		`{"jsonrpc":"2.0","id":8,"method":"session/list","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":9,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}` + "\n"
	msgs := run(t, &backend{}, in)
	for id, want := range map[string]int64{"0": codeInvalidRequest, "3": codeMethodNotFound, "4": codeInvalidParams,
		"5": codeInvalidParams, "6": codeInvalidParams, "7": codeNotFound, "8": codeInternal} {
		m := reply(t, msgs, id)
		if m.Error == nil || m.Error.Code != want {
			t.Errorf("request %s: %+v, want error %d", id, m.Error, want)
		}
	}
	var parseErr bool
	for _, m := range msgs {
		if m.Error != nil && m.Error.Code == codeParseError && string(m.ID) == "null" {
			parseErr = true
		}
	}
	if !parseErr {
		t.Errorf("malformed JSON was not answered -32700 with id null: %+v", msgs)
	}
	if e := reply(t, msgs, "5").Error; !strings.Contains(e.Message, "audio") {
		t.Errorf("audio refusal %q does not say why", e.Message)
	}
	if m := reply(t, msgs, "9"); m.Error != nil || !strings.Contains(string(m.Result), `"sessionId":"s_1"`) {
		t.Errorf("session/new after the bad input: %+v", m)
	}
}

// A prompt still running when the client closes stdin is finished and
// answered before Serve returns; requests start in the order they came,
// so one written right after session/new finds its session.
func TestPipelinedRequestsAreAnsweredAfterStdinCloses(t *testing.T) {
	b := &backend{}
	in := initLine +
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s_1","prompt":[{"type":"text","text":"hi"},{"type":"resource","resource":{"uri":"file:///a.go","text":"package a"}}]}}` + "\n"
	msgs := run(t, b, in)
	if m := reply(t, msgs, "3"); m.Error != nil || !strings.Contains(string(m.Result), `"end_turn"`) {
		t.Fatalf("the prompt: %+v", m)
	}
	// The answer carries the turn's usage: what the ledger grew by.
	if m := reply(t, msgs, "3"); !strings.Contains(string(m.Result),
		`"usage":{"cachedReadTokens":5,"cachedWriteTokens":0,"inputTokens":100,"outputTokens":10,"totalTokens":115}`) {
		t.Errorf("the prompt's answer %s lacks the turn's usage", m.Result)
	}
	if len(b.prompts) != 1 || len(b.prompts[0].Content) != 2 || !strings.Contains(b.prompts[0].Content[1].Text, "package a") {
		t.Fatalf("the backend got %+v: want the text and the embedded resource as text", b.prompts)
	}
	var commands bool
	for _, m := range msgs {
		if m.Method == "session/update" && strings.Contains(string(m.Params), "available_commands_update") {
			commands = true
		}
	}
	if !commands {
		t.Error("no available_commands_update after session/new")
	}
}

// Bridge's own slash commands run instead of a turn; any other slash
// command is the harness's and reaches it as the prompt's text.
func TestSlashCommands(t *testing.T) {
	for _, tc := range []struct {
		text string
		ours bool
		name string
	}{{"/compact the parser", true, "compact"}, {"  /search a b", true, "search"}, {"/review", false, "review"},
		{"not /a command", false, ""}} {
		name, _, ok := slashCommand([]schema.Content{{Type: "text", Text: tc.text}})
		_, known := commandNamed(name)
		if (ok && known) != tc.ours || (ok && name != tc.name) {
			t.Errorf("%q: name %q ok %v known %v", tc.text, name, ok, known)
		}
	}
}

// A session/changed the service reports (a rename, an archive, a branch
// moved, here or in another process) reaches the client as ACP's
// session_info_update for a session it opened: the title (null once
// there is none) and Bridge's archive flag and head in _meta.bridge. A
// session it did not open is not reported.
func TestSessionChangedIsASessionInfoUpdate(t *testing.T) {
	inR, inW := io.Pipe()
	var out strings.Builder
	var mu sync.Mutex
	wrote := make(chan struct{}, 100)
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		wrote <- struct{}{}
		return out.Write(p)
	})
	s := New(w, Options{Harness: "fake", Version: "test"})
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), inR, &backend{}) }()
	lines := func() []message {
		mu.Lock()
		defer mu.Unlock()
		var msgs []message
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var m message
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("the server wrote a line that is not JSON: %q", l)
			}
			msgs = append(msgs, m)
		}
		return msgs
	}
	if _, err := io.WriteString(inW, initLine+`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(time.Minute)
	for opened := false; !opened; {
		select {
		case <-wrote:
		case <-deadline:
			t.Fatal("no answer to session/new")
		}
		for _, m := range lines() {
			opened = opened || string(m.ID) == "2"
		}
	}
	s.SessionChanged(schema.SessionChangedNotification{SessionID: "s_1", Title: "renamed elsewhere", HeadID: "e_9"})
	s.SessionChanged(schema.SessionChangedNotification{SessionID: "s_1", Archived: true, HeadID: "e_9"})
	s.SessionChanged(schema.SessionChangedNotification{SessionID: "s_other", Title: "not opened here"})
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	var got []string
	for _, m := range lines() {
		if m.Method == "session/update" && strings.Contains(string(m.Params), "session_info_update") {
			got = append(got, string(m.Params))
		}
	}
	want := []string{
		`{"sessionId":"s_1","update":{"sessionUpdate":"session_info_update","title":"renamed elsewhere","_meta":{"bridge":{"archived":false,"headId":"e_9"}}}}`,
		`{"sessionId":"s_1","update":{"sessionUpdate":"session_info_update","title":null,"_meta":{"bridge":{"archived":true,"headId":"e_9"}}}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("session_info_updates:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// nullReply awaits the next reply with a null id after the first n such
// replies.
func (c *client) nullReply(n int) wireMsg {
	c.t.Helper()
	seen := 0
	return c.Await(fmt.Sprintf("null-id reply #%d", n+1), func(m wireMsg) bool {
		if m.Method != "" || string(m.ID) != "null" {
			return false
		}
		seen++
		return seen > n
	})
}

// TestBadFramesAreAnsweredAndSkipped sends malformed input of every kind;
// each is answered and the connection keeps serving.
func TestBadFramesAreAnsweredAndSkipped(t *testing.T) {
	c := startServer(t, newFake(), func(cfg *Config) { cfg.MaxContentLength = 1024 })
	c.initialize()

	cases := []struct {
		name    string
		raw     string
		code    int
		id      string // the reply's id ("null" when none can be read)
		message string // a substring of the error message
	}{
		{"malformed JSON", string(frame([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"a":}}`))),
			int(CodeParseError), "null", "not valid JSON"},
		{"truncated JSON", string(frame([]byte(`{"jsonrpc":"2.0","id":2,`))), int(CodeParseError), "null", "not valid JSON"},
		{"not a request", string(frame([]byte(`{"jsonrpc":"2.0","id":77,"method":5}`))), int(CodeInvalidRequest), "77", "not a JSON-RPC 2.0 message"},
		{"no jsonrpc member", string(frame([]byte(`{"id":"x1","method":"session/list"}`))), int(CodeInvalidRequest), `"x1"`, "JSON-RPC 2.0"},
		{"batch", string(frame([]byte(`[{"jsonrpc":"2.0","id":3,"method":"session/list"}]`))), int(CodeInvalidRequest), "null", "batches"},
		{"oversized body", "Content-Length: 4096\r\n\r\n" + strings.Repeat(" ", 4096), int(CodeInvalidRequest), "null",
			"message body of 4096 bytes exceeds the limit of 1024 bytes"},
		{"non-numeric Content-Length", "Content-Length: lots\r\n\r\n", int(CodeParseError), "null", `Content-Length "lots"`},
		{"garbled header line with length", "Content-Length: 2\r\nthis is no header\r\n\r\n{}", int(CodeParseError), "null",
			"is not a \"Name: value\" field"},
		{"misspelt Content-Length, resynchronised", "Content-Lenght: 20\r\n\r\n" + `{"jsonrpc":"2.0"}`, int(CodeParseError), "null",
			"no Content-Length field"},
	}
	nulls := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.sendRaw([]byte(tc.raw))
			var m wireMsg
			if tc.id == "null" {
				m = c.nullReply(nulls)
				nulls++
			} else {
				m = c.Await("reply "+tc.id, func(m wireMsg) bool { return m.Method == "" && string(m.ID) == tc.id })
			}
			e := wantError(t, m, tc.code)
			if !strings.Contains(e.Message, tc.message) {
				t.Errorf("message %q lacks %q", e.Message, tc.message)
			}
			// The connection carries on.
			c.MustCall("session/list", map[string]any{}, nil)
		})
	}
}

// TestResyncAfterUnframedBody checks that after a header without
// Content-Length the next real frame is still found, even though the stray
// body runs into its header line.
func TestResyncAfterUnframedBody(t *testing.T) {
	c := startServer(t, newFake(), nil)
	c.initialize()
	id := c.NextID()
	good := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/list","params":{}}`, id)
	c.sendRaw([]byte("X-Foo: bar\r\n\r\n{\"stray\":true}" + string(frame([]byte(good)))))
	wantError(t, c.nullReply(0), int(CodeParseError))
	if m := c.reply(id); m.Error != nil {
		t.Fatalf("the frame after the stray body failed: %+v", m.Error)
	}
}

// TestHugeContentLengthIsNotAllocated declares an 8 GiB body: the refusal
// comes before any of it is sent, so the server cannot have allocated it.
func TestHugeContentLengthIsNotAllocated(t *testing.T) {
	c := startServer(t, newFake(), nil)
	c.initialize()
	c.sendRaw([]byte("Content-Length: 8589934592\r\n\r\n"))
	e := wantError(t, c.nullReply(0), int(CodeInvalidRequest))
	if !strings.Contains(e.Message, "exceeds the limit of 67108864 bytes") {
		t.Errorf("message %q", e.Message)
	}
	// The server is now discarding; ending the input ends it cleanly.
	c.w.Close()
	if r := c.waitExit(); r.code != 1 || r.err == nil {
		t.Errorf("input ended mid-body: code %d err %v, want 1 and a truncation error", r.code, r.err)
	}
}

func TestUnknownMethod(t *testing.T) {
	c := startServer(t, newFake(), nil)
	c.initialize()
	e := wantError(t, c.Call("session/teleport", map[string]any{}), int(CodeMethodNotFound))
	if !strings.Contains(e.Message, "session/teleport") {
		t.Errorf("message %q", e.Message)
	}
	// Unknown notifications are ignored.
	c.Send(nil, "session/teleport", map[string]any{})
	c.MustCall("session/list", nil, nil)
}

func TestInvalidParams(t *testing.T) {
	c := startServer(t, newFake(), nil)
	c.initialize()
	cases := []struct {
		method string
		params any
		field  string
		msg    string
	}{
		{"session/history", map[string]any{}, "sessionId", `missing required field "sessionId"`},
		{"session/history", map[string]any{"sessionId": nil}, "sessionId", `field "sessionId" must be a string, not null`},
		{"session/history", map[string]any{"sessionId": 5}, "sessionId", `field "sessionId" must be a string, not number`},
		{"session/history", map[string]any{"sessionId": "s", "beforeSeq": "ten"}, "beforeSeq", `field "beforeSeq" must be an integer, not string`},
		{"session/history", []any{"s"}, "", "params must be an object"},
		{"session/prompt", map[string]any{"sessionId": "s"}, "content", `missing required field "content"`},
		{"session/prompt", map[string]any{"sessionId": "s", "content": []any{map[string]any{"type": "text", "text": "a"}, map[string]any{"text": "b"}}},
			"content[1].type", `missing required field "content[1].type"`},
		{"session/create", map[string]any{"harness": "fake"}, "cwd", `missing required field "cwd"`},
		{"session/prompt", map[string]any{"sessionId": "s", "content": []any{map[string]any{"type": "video"}}}, "content[0].type", `"video" is not one of "text", "image"`},
		{"session/prompt", map[string]any{"sessionId": "s", "content": []any{map[string]any{"type": "image", "mediaType": "image/png"}}}, "content[0].data", `missing required field "content[0].data"`},
		{"session/prompt", map[string]any{"sessionId": "s", "content": []any{}}, "content", "at least 1 item"},
		{"session/resume", map[string]any{"sessionId": "s", "mode": "hot"}, "mode", `mode "hot" is not one of "fresh"`},
		{"session/checkpoint", map[string]any{"sessionId": "s", "reason": "bored"}, "reason", `reason "bored" is not one of`},
		{"migration/execute", map[string]any{"previewId": "p", "inject": "all"}, "inject", `inject "all" is not one of "goal", "prompt", "both"`},
		{"migration/execute", map[string]any{"previewId": "p", "goalRounds": -2}, "goalRounds", "goalRounds must be at least 0, not -2"},
		{"migration/preview", map[string]any{"sessionId": "s", "target": map[string]any{}, "lang": "fr"}, "lang", `lang "fr" is not one of "en", "zh"`},
		{"migration/preview", map[string]any{"sessionId": "s", "target": map[string]any{"model": 5}}, "target.model", `field "target.model" must be a string, not number`},
		{"session/list", map[string]any{"limit": -1}, "limit", "limit must be at least 0, not -1"},
		{"session/search", map[string]any{"query": "x", "limit": 500}, "limit", "limit must be at most 200, not 500"},
		{"session/history", map[string]any{"sessionId": "s", "beforeSeq": 0}, "beforeSeq", "beforeSeq must be at least 1, not 0"},
		{"session/history", map[string]any{"sessionId": "s", "maxMessages": 1.5}, "maxMessages", `field "maxMessages" must be an integer, not number`},
		{"session/list", map[string]any{"limit": 1e30}, "limit", "limit"},
		{"migration/preview", map[string]any{"sessionId": "s"}, "target", `missing required field "target"`},
	}
	for _, tc := range cases {
		e := wantError(t, c.Call(tc.method, tc.params), int(CodeInvalidParams))
		d := errData(t, e)
		if d.Code != core.CodeInvalid || d.Field != tc.field || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s %v: got %q data %+v; want field %q and message containing %q", tc.method, tc.params, e.Message, d, tc.field, tc.msg)
		}
	}
}

// TestDomainErrors checks the one mapping table from core codes to
// JSON-RPC errors, and that internal details stay in the log.
func TestDomainErrors(t *testing.T) {
	fake := newFake()
	var next error
	fake.history = func(context.Context, schema.SessionHistoryParams) (schema.SessionHistoryResult, error) {
		return schema.SessionHistoryResult{}, next
	}
	c := startServer(t, fake, nil)
	c.initialize()
	unavailable := core.Errorf(core.CodeUnavailable, "codex cannot resume natively")
	unavailable.Missing = []string{"native.resume", "history.window"}
	cases := []struct {
		err     error
		code    int
		data    core.Code
		message string
		missing []string
	}{
		{core.NotFound("session", "s1"), int(CodeDomain), core.CodeNotFound, `session "s1" not found`, nil},
		{fmt.Errorf("service: %w", core.Errorf(core.CodeBusy, "a checkpoint is pending")), int(CodeDomain), core.CodeBusy, "a checkpoint is pending", nil},
		{core.Errorf(core.CodeInvalid, "maxMessages too large"), int(CodeInvalidParams), core.CodeInvalid, "maxMessages too large", nil},
		{unavailable, int(CodeDomain), core.CodeUnavailable, "codex cannot resume natively", []string{"native.resume", "history.window"}},
		{core.E(core.CodeCancelled, "turn cancelled", core.ErrCancelled), int(CodeCancelled), core.CodeCancelled, "cancelled", nil},
		{core.E(core.CodeHarness, "codex exited", errors.New("exit status 3 at /home/secret/bin")), int(CodeDomain), core.CodeHarness, "codex exited", nil},
		{errors.New("sqlite: disk I/O error at /home/secret/db"), int(CodeInternal), core.CodeInternal, "internal error", nil},
		{core.E(core.CodeInternal, "store broke at /home/secret", nil), int(CodeInternal), core.CodeInternal, "internal error", nil},
	}
	// An invalid input's cause is said in data.detail (the schema's member).
	next = core.E(core.CodeInvalid, "read the handoff file", errors.New("open edited.md: no such file or directory"))
	if d := errData(t, wantError(t, c.Call("session/history", map[string]any{"sessionId": "s1"}), int(CodeInvalidParams))); d.Detail != "open edited.md: no such file or directory" {
		t.Errorf("detail %q", d.Detail)
	}
	for _, tc := range cases {
		next = tc.err
		e := wantError(t, c.Call("session/history", map[string]any{"sessionId": "s1"}), tc.code)
		d := errData(t, e)
		if string(d.Code) != string(tc.data) || !strings.Contains(e.Message, tc.message) || fmt.Sprint(d.Missing) != fmt.Sprint(tc.missing) {
			t.Errorf("%v: got %d %q %+v", tc.err, e.Code, e.Message, d)
		}
		if strings.Contains(e.Message, "secret") || strings.Contains(string(e.Data), "secret") {
			t.Errorf("%v: details leaked to the client: %q %s", tc.err, e.Message, e.Data)
		}
	}
	if !strings.Contains(c.logBuf.String(), "sqlite: disk I/O error at /home/secret/db") {
		t.Errorf("the internal error was not logged:\n%s", c.logBuf.String())
	}
}

// TestWireCodesTable pins the mapping for every code in the closed set.
func TestWireCodesTable(t *testing.T) {
	for _, code := range core.Codes {
		e := toWire(discardLogger(), "m", core.Errorf(code, "x"))
		want := CodeDomain
		switch code {
		case core.CodeInvalid:
			want = CodeInvalidParams
		case core.CodeCancelled:
			want = CodeCancelled
		case core.CodeInternal:
			want = CodeInternal
		}
		if e.Code != want {
			t.Errorf("%s -> %d, want %d", code, e.Code, want)
		}
		if !strings.Contains(string(e.Data), `"code":"`+string(code)+`"`) {
			t.Errorf("%s: data %s", code, e.Data)
		}
	}
	if e := toWire(discardLogger(), "m", context.Canceled); e.Code != CodeCancelled {
		t.Errorf("context.Canceled -> %d", e.Code)
	}
}

// TestPanicFailsOnlyItsRequest checks a panicking backend answers -32603
// without the panic's text and the connection carries on.
func TestPanicFailsOnlyItsRequest(t *testing.T) {
	fake := newFake()
	fake.doctor = func(context.Context, schema.DoctorParams) (schema.DoctorResult, error) { panic("boom at /home/secret") }
	c := startServer(t, fake, nil)
	c.initialize()
	e := wantError(t, c.Call("bridge/doctor", map[string]any{}), int(CodeInternal))
	if strings.Contains(e.Message, "secret") {
		t.Errorf("panic leaked: %q", e.Message)
	}
	c.MustCall("session/list", nil, nil)
	if !strings.Contains(c.logBuf.String(), "boom at /home/secret") {
		t.Errorf("panic not logged")
	}
}

// TestDefaultLoggerKeepsStdoutClean provokes warnings with the default
// logger; the client's strict frame reader fails on any stray byte.
func TestDefaultLoggerKeepsStdoutClean(t *testing.T) {
	c := startServer(t, newFake(), func(cfg *Config) { cfg.Logger = nil })
	c.initialize()
	c.sendRaw(frame([]byte(`{not json`)))
	wantError(t, c.nullReply(0), int(CodeParseError))
	c.sendRaw([]byte("junk Content-Length: 2\r\n\r\n{}"))
	c.MustCall("session/list", nil, nil)
}

package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/schema/validate"
)

// fakeBackend is a Backend with a function field for some methods; a nil
// field answers with a zero value. Every call's params are recorded.
type fakeBackend struct {
	// Backend answers the methods the fake does not define (none yet; a
	// new row's method panics here until a test needs it: the panic fails
	// only that request).
	schema.Backend
	create     func(ctx context.Context, p schema.SessionCreateParams) (schema.SessionCreateResult, error)
	prompt     func(ctx context.Context, p schema.SessionPromptParams) (schema.SessionPromptResult, error)
	history    func(ctx context.Context, p schema.SessionHistoryParams) (schema.SessionHistoryResult, error)
	list       func(ctx context.Context, p schema.SessionListParams) (schema.SessionListResult, error)
	checkpoint func(ctx context.Context, p schema.SessionCheckpointParams) (schema.SessionCheckpointResult, error)
	doctor     func(ctx context.Context, p schema.DoctorParams) (schema.DoctorResult, error)
	closed     chan struct{}
	closeOnce  sync.Once

	mu    sync.Mutex
	calls []any // params of every call, in order
}

func newFake() *fakeBackend { return &fakeBackend{closed: make(chan struct{})} }

// serve records p and calls fn when set, else returns the zero R.
func serve[P, R any](f *fakeBackend, ctx context.Context, p P, fn func(context.Context, P) (R, error)) (R, error) {
	f.mu.Lock()
	f.calls = append(f.calls, p)
	f.mu.Unlock()
	if fn != nil {
		return fn(ctx, p)
	}
	var r R
	return r, nil
}

// received returns the params of every call so far.
func (f *fakeBackend) received() []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]any(nil), f.calls...)
}

func (f *fakeBackend) BridgeDoctor(ctx context.Context, p schema.DoctorParams) (schema.DoctorResult, error) {
	return serve(f, ctx, p, f.doctor)
}
func (f *fakeBackend) SessionList(ctx context.Context, p schema.SessionListParams) (schema.SessionListResult, error) {
	return serve(f, ctx, p, f.list)
}
func (f *fakeBackend) SessionCreate(ctx context.Context, p schema.SessionCreateParams) (schema.SessionCreateResult, error) {
	if f.create == nil {
		return serve(f, ctx, p, func(_ context.Context, p schema.SessionCreateParams) (schema.SessionCreateResult, error) {
			return schema.SessionCreateResult{SessionID: "s1", Harness: p.Harness}, nil
		})
	}
	return serve(f, ctx, p, f.create)
}
func (f *fakeBackend) SessionPrompt(ctx context.Context, p schema.SessionPromptParams) (schema.SessionPromptResult, error) {
	if f.prompt == nil {
		return serve(f, ctx, p, func(context.Context, schema.SessionPromptParams) (schema.SessionPromptResult, error) {
			return schema.SessionPromptResult{StopReason: "end_turn"}, nil
		})
	}
	return serve(f, ctx, p, f.prompt)
}
func (f *fakeBackend) SessionCancel(ctx context.Context, p schema.SessionCancelParams) (schema.SessionCancelResult, error) {
	return serve[schema.SessionCancelParams, schema.SessionCancelResult](f, ctx, p, nil)
}
func (f *fakeBackend) SessionRename(ctx context.Context, p schema.SessionRenameParams) (schema.SessionRenameResult, error) {
	return serve[schema.SessionRenameParams, schema.SessionRenameResult](f, ctx, p, nil)
}
func (f *fakeBackend) SessionArchive(ctx context.Context, p schema.SessionArchiveParams) (schema.SessionArchiveResult, error) {
	return serve[schema.SessionArchiveParams, schema.SessionArchiveResult](f, ctx, p, nil)
}
func (f *fakeBackend) SessionHistory(ctx context.Context, p schema.SessionHistoryParams) (schema.SessionHistoryResult, error) {
	return serve(f, ctx, p, f.history)
}
func (f *fakeBackend) SessionResume(ctx context.Context, p schema.SessionResumeParams) (schema.SessionResumeResult, error) {
	return serve(f, ctx, p, func(_ context.Context, p schema.SessionResumeParams) (schema.SessionResumeResult, error) {
		if p.Mode == schema.ResumeFresh {
			return schema.SessionResumeResult{SessionID: p.SessionID, Mode: schema.ModeFresh}, nil
		}
		return schema.SessionResumeResult{SessionID: p.SessionID, Mode: schema.ModeHot}, nil
	})
}
func (f *fakeBackend) SessionCompact(ctx context.Context, p schema.SessionCompactParams) (schema.SessionCompactResult, error) {
	return serve(f, ctx, p, func(context.Context, schema.SessionCompactParams) (schema.SessionCompactResult, error) {
		return schema.SessionCompactResult{By: schema.CompactedByBridge}, nil
	})
}
func (f *fakeBackend) SessionCheckpoint(ctx context.Context, p schema.SessionCheckpointParams) (schema.SessionCheckpointResult, error) {
	if f.checkpoint == nil {
		return serve(f, ctx, p, func(_ context.Context, p schema.SessionCheckpointParams) (schema.SessionCheckpointResult, error) {
			return schema.SessionCheckpointResult{EntryID: "e1", Provenance: schema.ProvenanceAgent, Reason: p.Reason}, nil
		})
	}
	return serve(f, ctx, p, f.checkpoint)
}
func (f *fakeBackend) SessionImport(ctx context.Context, p schema.SessionImportParams) (schema.SessionImportResult, error) {
	return serve[schema.SessionImportParams, schema.SessionImportResult](f, ctx, p, nil)
}
func (f *fakeBackend) SessionSuspend(ctx context.Context, p schema.SessionSuspendParams) (schema.SessionSuspendResult, error) {
	return serve[schema.SessionSuspendParams, schema.SessionSuspendResult](f, ctx, p, nil)
}
func (f *fakeBackend) SessionModels(ctx context.Context, p schema.SessionModelsParams) (schema.SessionModelsResult, error) {
	return serve[schema.SessionModelsParams, schema.SessionModelsResult](f, ctx, p, nil)
}
func (f *fakeBackend) SessionSelectModel(ctx context.Context, p schema.SessionSelectModelParams) (schema.SessionSelectModelResult, error) {
	return serve[schema.SessionSelectModelParams, schema.SessionSelectModelResult](f, ctx, p, nil)
}
func (f *fakeBackend) HostedRequestPermission(ctx context.Context, p schema.HostedRequestPermissionParams) (schema.HostedRequestPermissionResult, error) {
	return serve[schema.HostedRequestPermissionParams, schema.HostedRequestPermissionResult](f, ctx, p, nil)
}
func (f *fakeBackend) SessionSearch(ctx context.Context, p schema.SessionSearchParams) (schema.SessionSearchResult, error) {
	return serve[schema.SessionSearchParams, schema.SessionSearchResult](f, ctx, p, nil)
}

func (f *fakeBackend) SessionFork(ctx context.Context, p schema.SessionForkParams) (schema.SessionForkResult, error) {
	return serve[schema.SessionForkParams, schema.SessionForkResult](f, ctx, p, nil)
}

func (f *fakeBackend) SessionExport(ctx context.Context, p schema.SessionExportParams) (schema.SessionExportResult, error) {
	return serve[schema.SessionExportParams, schema.SessionExportResult](f, ctx, p, nil)
}
func (f *fakeBackend) MigrationPreview(ctx context.Context, p schema.MigrationPreviewParams) (schema.MigrationPreviewResult, error) {
	return serve[schema.MigrationPreviewParams, schema.MigrationPreviewResult](f, ctx, p, nil)
}
func (f *fakeBackend) MigrationExecute(ctx context.Context, p schema.MigrationExecuteParams) (schema.MigrationExecuteResult, error) {
	return serve[schema.MigrationExecuteParams, schema.MigrationExecuteResult](f, ctx, p, nil)
}
func (f *fakeBackend) Close(context.Context) error {
	f.closeOnce.Do(func() { close(f.closed) })
	return nil
}

// wireMsg is any message as the test client sees it.
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *wireErr        `json:"error,omitempty"`
}

type wireErr struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// errData decodes the error's data member.
func (e *wireErr) errData(t *testing.T) errorData {
	t.Helper()
	var d errorData
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("error data %s: %v", e.Data, err)
	}
	return d
}

// client is a fake editor speaking raw frames to a server run by Serve over
// io.Pipe pairs. It records every message the server sends, so tests await
// conditions on that stream instead of sleeping.
type client struct {
	t      *testing.T
	w      *io.PipeWriter
	wmu    sync.Mutex
	seq    int
	fake   *fakeBackend
	logBuf *syncBuffer

	mu      sync.Mutex
	msgs    []wireMsg
	changed chan struct{}
	readErr error

	// onCall answers server-to-client requests; nil answers null.
	onCall func(m wireMsg) (any, *wireErr)

	exit chan serveResult
}

type serveResult struct {
	code int
	err  error
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer runs Serve with a fake backend and returns the client side.
func startServer(t *testing.T, fake *fakeBackend, tweak func(*Config)) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logBuf := &syncBuffer{}
	cfg := Config{
		Version: "test",
		Logger:  slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Open: func(ctx context.Context, opts InitOptions, n peer.Notifier, c Caller) (Backend, error) {
			return fake, nil
		},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	c := &client{t: t, w: inW, fake: fake, logBuf: logBuf, changed: make(chan struct{}), exit: make(chan serveResult, 1)}
	go func() {
		code, err := Serve(context.Background(), inR, outW, cfg)
		outW.Close()
		c.exit <- serveResult{code, err}
	}()
	go c.readLoop(outR)
	t.Cleanup(func() {
		inW.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", logBuf.String())
		}
	})
	return c
}

// readLoop parses frames strictly: anything on the server's stdout that is
// not a Content-Length frame of JSON fails the test.
func (c *client) readLoop(r io.Reader) {
	br := bufio.NewReader(r)
	var err error
	for {
		var m wireMsg
		m, err = readFrame(br)
		if err != nil {
			break
		}
		if m.Method != "" && len(m.ID) > 0 {
			go c.answer(m)
		}
		c.mu.Lock()
		c.msgs = append(c.msgs, m)
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.readErr = err
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func readFrame(br *bufio.Reader) (wireMsg, error) {
	var m wireMsg
	length := -1
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return m, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(name, "Content-Length") {
			return m, fmt.Errorf("stdout carried a non-frame line %q", line)
		}
		length, err = strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return m, fmt.Errorf("bad Content-Length %q", value)
		}
	}
	if length < 0 {
		return m, fmt.Errorf("frame without Content-Length")
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return m, err
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("frame body %q: %w", body, err)
	}
	if m.JSONRPC != "2.0" {
		return m, fmt.Errorf("frame body %q lacks jsonrpc 2.0", body)
	}
	return m, nil
}

// answer replies to a server-to-client request.
func (c *client) answer(m wireMsg) {
	var res any
	var werr *wireErr
	if c.onCall != nil {
		res, werr = c.onCall(m)
		if res == nil && werr == nil {
			return // the test answers later, or never
		}
	}
	reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if werr != nil {
		reply["error"] = werr
	} else {
		reply["result"] = res
	}
	b, _ := json.Marshal(reply)
	c.sendRaw(frame(b))
}

// frame wraps body in an LSP header.
func frame(body []byte) []byte {
	return append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...)
}

// sendRaw writes bytes to the server's stdin.
func (c *client) sendRaw(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(b); err != nil {
		c.t.Errorf("writing to the server: %v", err)
	}
}

// send writes one message; id may be nil (a notification), an int or a
// string.
func (c *client) send(id any, method string, params any) {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(frame(b))
}

// nextID returns a fresh numeric request id.
func (c *client) nextID() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.seq++
	return c.seq
}

// await blocks until some message satisfies pred and returns it. Without a
// match it ends when the test binary's timeout fires, or fails when the
// server's output ends.
func (c *client) await(what string, pred func(wireMsg) bool) wireMsg {
	c.t.Helper()
	seen := 0
	for {
		c.mu.Lock()
		msgs, ch, rerr := c.msgs, c.changed, c.readErr
		c.mu.Unlock()
		for _, m := range msgs[seen:] {
			if pred(m) {
				return m
			}
		}
		seen = len(msgs)
		if rerr != nil {
			c.t.Fatalf("awaiting %s: the server's output ended: %v", what, rerr)
		}
		<-ch
	}
}

// reply awaits the response to id.
func (c *client) reply(id any) wireMsg {
	c.t.Helper()
	want, _ := json.Marshal(id)
	return c.await("reply to "+string(want), func(m wireMsg) bool {
		return m.Method == "" && bytes.Equal(m.ID, want)
	})
}

// call sends a request and awaits its response.
func (c *client) call(method string, params any) wireMsg {
	c.t.Helper()
	id := c.nextID()
	c.send(id, method, params)
	return c.reply(id)
}

// mustCall calls and decodes a successful result into out (may be nil).
func (c *client) mustCall(method string, params, out any) {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s: result %s: %v", method, m.Result, err)
		}
	}
}

// wantError checks m is an error reply with code.
func wantError(t *testing.T, m wireMsg, code int) *wireErr {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("reply %s: want error %d, got result %s", m.ID, code, m.Result)
	}
	if m.Error.Code != code {
		t.Fatalf("reply %s: want error %d, got %d %q", m.ID, code, m.Error.Code, m.Error.Message)
	}
	// The data of every error that has one (protocol errors have none)
	// is the contract's ErrorData.
	if len(m.Error.Data) > 0 {
		if err := validate.JSON("ErrorData", m.Error.Data); err != nil {
			t.Errorf("reply %s: error data %s does not match the ErrorData schema: %v", m.ID, m.Error.Data, err)
		}
	}
	return m.Error
}

// notification awaits a notification of method matching pred (nil: any).
func (c *client) notification(method string, pred func(params json.RawMessage) bool) wireMsg {
	c.t.Helper()
	return c.await(method, func(m wireMsg) bool {
		return m.Method == method && len(m.ID) == 0 && (pred == nil || pred(m.Params))
	})
}

// initialize runs the handshake.
func (c *client) initialize() {
	c.t.Helper()
	c.mustCall("initialize", map[string]any{"processId": 1, "capabilities": map[string]any{}}, nil)
	c.send(nil, "initialized", map[string]any{})
}

// waitExit returns Serve's outcome once it has returned.
func (c *client) waitExit() serveResult {
	c.t.Helper()
	return <-c.exit
}

// index returns the position of the first message matching pred, or -1.
func (c *client) index(pred func(wireMsg) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.msgs {
		if pred(m) {
			return i
		}
	}
	return -1
}

// blockUntilCancelled is a backend body that waits for cancellation.
func blockUntilCancelled(ctx context.Context, started chan<- struct{}) error {
	if started != nil {
		close(started)
	}
	<-ctx.Done()
	return core.E(core.CodeCancelled, "turn cancelled", ctx.Err())
}

var _ = time.Second

func typeName(v any) string { return fmt.Sprintf("%T", v) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// snapshot returns the messages received so far.
func (c *client) snapshot() []wireMsg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wireMsg(nil), c.msgs...)
}

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
	"github.com/bridge-dev/bridge/core/service"
)

// fakeBackend is a Backend with one function field per method; a nil field
// answers with a zero value.
type fakeBackend struct {
	create     func(ctx context.Context, p service.CreateParams) (core.Session, error)
	prompt     func(ctx context.Context, id string, c []core.Content) (core.TurnResult, error)
	history    func(ctx context.Context, id string, before int64, max int) ([]core.Entry, bool, error)
	list       func(ctx context.Context, q core.ListQuery) ([]core.Session, string, error)
	checkpoint func(ctx context.Context, id, reason string) (service.CheckpointOutcome, error)
	doctor     func(ctx context.Context, harness string) (service.DoctorReport, error)
	closed     chan struct{}
	closeOnce  sync.Once
}

func newFake() *fakeBackend { return &fakeBackend{closed: make(chan struct{})} }

func (f *fakeBackend) Create(ctx context.Context, p service.CreateParams) (core.Session, error) {
	if f.create != nil {
		return f.create(ctx, p)
	}
	return core.Session{ID: "s1", Harness: p.Harness}, nil
}
func (f *fakeBackend) Prompt(ctx context.Context, id string, c []core.Content) (core.TurnResult, error) {
	if f.prompt != nil {
		return f.prompt(ctx, id, c)
	}
	return core.TurnResult{StopReason: "end_turn"}, nil
}
func (f *fakeBackend) Cancel(context.Context, string) error         { return nil }
func (f *fakeBackend) Rename(context.Context, string, string) error { return nil }
func (f *fakeBackend) Archive(context.Context, string) error        { return nil }
func (f *fakeBackend) History(ctx context.Context, id string, before int64, max int) ([]core.Entry, bool, error) {
	if f.history != nil {
		return f.history(ctx, id, before, max)
	}
	return nil, false, nil
}
func (f *fakeBackend) List(ctx context.Context, q core.ListQuery) ([]core.Session, string, error) {
	if f.list != nil {
		return f.list(ctx, q)
	}
	return nil, "", nil
}
func (f *fakeBackend) Resume(_ context.Context, id string, fresh bool) (service.Restored, error) {
	if fresh {
		return service.Restored{SessionID: id, Mode: core.ModeFresh}, nil
	}
	return service.Restored{SessionID: id, Mode: core.ModeHot}, nil
}
func (f *fakeBackend) Compact(context.Context, string, string) (service.CompactOutcome, error) {
	return service.CompactOutcome{By: "bridge"}, nil
}
func (f *fakeBackend) Checkpoint(ctx context.Context, id, reason string) (service.CheckpointOutcome, error) {
	if f.checkpoint != nil {
		return f.checkpoint(ctx, id, reason)
	}
	return service.CheckpointOutcome{EntryID: "e1", Provenance: "agent", Reason: reason}, nil
}
func (f *fakeBackend) Import(context.Context, string, string) (service.ImportOutcome, error) {
	return service.ImportOutcome{}, nil
}
func (f *fakeBackend) Doctor(ctx context.Context, h string) (service.DoctorReport, error) {
	if f.doctor != nil {
		return f.doctor(ctx, h)
	}
	return service.DoctorReport{}, nil
}
func (f *fakeBackend) MigrationPreview(context.Context, service.PreviewRequest) (service.Preview, error) {
	return service.Preview{}, nil
}
func (f *fakeBackend) MigrationExecute(context.Context, service.ExecuteRequest) (service.ExecuteOutcome, error) {
	return service.ExecuteOutcome{}, nil
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
		Open: func(ctx context.Context, opts InitOptions, n service.Notifier, c Caller) (Backend, error) {
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

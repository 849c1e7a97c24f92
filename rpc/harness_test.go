package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/rpctest"
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

// wireMsg and wireErr are messages and errors as the test client sees
// them.
type (
	wireMsg = rpctest.Message
	wireErr = rpctest.Error
)

// errData decodes e's data member; data that is not the contract's
// ErrorData fails the test.
func errData(t *testing.T, e *wireErr) errorData {
	t.Helper()
	var d errorData
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("error data %s: %v", e.Data, err)
	}
	return d
}

// client is the test client (rpctest) speaking frames to a server run by
// Serve over io.Pipe pairs, with the server's fake backend, log and exit.
type client struct {
	*rpctest.Client
	t      *testing.T
	w      *io.PipeWriter // the server's input
	fake   *fakeBackend
	logBuf *syncBuffer
	exit   chan serveResult
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
// The server's requests are answered null unless a test sets its own
// answers (SetOnRequest).
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
	c := newClient(t, fake, logBuf, outR, inW)
	go func() {
		code, err := Serve(context.Background(), inR, outW, cfg)
		outW.Close()
		c.exit <- serveResult{code, err}
	}()
	t.Cleanup(func() {
		inW.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", logBuf.String())
		}
	})
	return c
}

// newClient is the client reading the server's output out and writing its
// input in.
func newClient(t *testing.T, fake *fakeBackend, logBuf *syncBuffer, out io.Reader, in *io.PipeWriter) *client {
	return &client{Client: rpctest.NewFramed(t, out, in, rpctest.Options{OnRequest: rpctest.AnswerNull, FailWrites: true}),
		t: t, w: in, fake: fake, logBuf: logBuf, exit: make(chan serveResult, 1)}
}

// frame wraps body in an LSP header.
func frame(body []byte) []byte { return rpctest.Frame(body) }

// sendRaw writes bytes to the server's stdin as they are.
func (c *client) sendRaw(b []byte) {
	if err := c.WriteRaw(b); err != nil {
		c.t.Errorf("writing to the server: %v", err)
	}
}

// reply awaits the response to id (an int or a string).
func (c *client) reply(id any) wireMsg {
	c.t.Helper()
	want, _ := json.Marshal(id)
	return c.Reply(string(want))
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

// initialize runs the handshake.
func (c *client) initialize() {
	c.t.Helper()
	c.MustCall("initialize", map[string]any{"processId": 1, "capabilities": map[string]any{}}, nil)
	c.Notify("initialized", map[string]any{})
}

// waitExit returns Serve's outcome once it has returned.
func (c *client) waitExit() serveResult {
	c.t.Helper()
	return <-c.exit
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

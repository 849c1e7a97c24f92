package rpchost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/adapters/rpchost"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// handler answers one host/* method of the fake client.
type handler func(ctx context.Context, params json.RawMessage) (any, error)

// fakeCaller is a scripted hosting client. Handlers run on the caller's
// goroutine; one that calls host.HostEvent before returning behaves like a
// client that sends its notifications before its reply on one stream.
type fakeCaller struct {
	mu       sync.Mutex
	calls    []string
	params   map[string][]json.RawMessage
	handlers map[string]handler
}

func newFakeCaller() *fakeCaller {
	return &fakeCaller{params: map[string][]json.RawMessage{}, handlers: map[string]handler{}}
}

func (f *fakeCaller) on(method string, h handler) { f.handlers[method] = h }

func (f *fakeCaller) Call(ctx context.Context, method string, params, result any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.calls = append(f.calls, method)
	f.params[method] = append(f.params[method], raw)
	h := f.handlers[method]
	f.mu.Unlock()
	if h == nil {
		return &jsonrpc2.Error{Code: jsonrpc2.MethodNotFound, Message: "method not found: " + method}
	}
	res, err := h(ctx, raw)
	if err != nil {
		return err
	}
	if result == nil || res == nil {
		return nil
	}
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(out, result)
}

func (f *fakeCaller) sent(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.params[method])
}

// fullProbe reports every capability available.
func fullProbe(context.Context, json.RawMessage) (any, error) {
	var caps []schema.Capability
	for _, n := range core.Capabilities {
		caps = append(caps, schema.Capability{Name: n, Available: true})
	}
	return schema.HostProbeResult{Harness: "fh", Version: "9", Capabilities: caps}, nil
}

func allCaps() []string {
	return append([]string{}, core.Capabilities...)
}

func without(list []string, drop ...string) []string {
	var out []string
	for _, x := range list {
		keep := true
		for _, d := range drop {
			keep = keep && x != d
		}
		if keep {
			out = append(out, x)
		}
	}
	return out
}

// sinkLog records what a live session delivers.
type sinkLog struct {
	mu     sync.Mutex
	events []core.Event
}

func (s *sinkLog) sink(ev core.Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
}

func (s *sinkLog) all() []core.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]core.Event(nil), s.events...)
}

// wait waits until at least n events have arrived (bounded, so that a lost
// event fails instead of hanging).
func (s *sinkLog) wait(t *testing.T, n int) []core.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.all()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return s.all()
}

// logBuf is a concurrency-safe log destination.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func createHandler(id string) handler {
	return func(context.Context, json.RawMessage) (any, error) {
		return schema.HostSessionCreateResult{NativeID: id}, nil
	}
}

func ack(context.Context, json.RawMessage) (any, error) { return schema.HostAck{}, nil }

func notify(t *testing.T, h *rpchost.Host, n schema.HostEventNotification) {
	t.Helper()
	raw, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	h.HostEvent(context.Background(), raw)
}

func TestCapabilityGating(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCaller()
	fc.on("host/probe", func(ctx context.Context, p json.RawMessage) (any, error) {
		res, _ := fullProbe(ctx, p)
		r := res.(schema.HostProbeResult)
		for i := range r.Capabilities {
			if r.Capabilities[i].Name == core.CapSessionRename {
				r.Capabilities[i].Available, r.Capabilities[i].Detail = false, "titles are read-only here"
			}
		}
		// session.historyWindow is not listed at all.
		r.Capabilities = func() []schema.Capability {
			var out []schema.Capability
			for _, c := range r.Capabilities {
				if c.Name != core.CapHistoryWindow {
					out = append(out, c)
				}
			}
			return out
		}()
		return r, nil
	})
	fc.on("host/session.create", createHandler("n1"))
	fc.on("host/session.close", ack)
	notAdvertised := []string{core.CapGoalCreate, core.CapGoalClear, core.CapCompactCommand, core.CapNativeResume, core.CapAttachment}
	h := rpchost.New(fc, "fh", without(allCaps(), notAdvertised...))
	p := h.Probe(ctx)
	if p.Harness != "fh" || p.Version != "9" {
		t.Fatalf("probe %+v", p)
	}
	detail := map[string]string{}
	for _, c := range p.Capabilities {
		detail[c.Name] = c.Detail
	}
	for _, name := range notAdvertised {
		if p.Has(name) || !strings.Contains(detail[name], "did not advertise") {
			t.Errorf("%s: available=%v detail %q; want unavailable because not advertised", name, p.Has(name), detail[name])
		}
	}
	if p.Has(core.CapSessionRename) || !strings.Contains(detail[core.CapSessionRename], "titles are read-only here") {
		t.Errorf("session.rename: detail %q; want the client's reason", detail[core.CapSessionRename])
	}
	if p.Has(core.CapHistoryWindow) || !strings.Contains(detail[core.CapHistoryWindow], "does not list it") {
		t.Errorf("session.historyWindow: detail %q", detail[core.CapHistoryWindow])
	}
	if !p.Has(core.CapGoalPause) || !p.Has(core.CapSessionPrompt) {
		t.Errorf("advertised and probed capabilities must be available: %+v", p)
	}

	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: "/w"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := len(fc.calls)
	if _, err := live.(core.GoalHost).CreateGoal(ctx, core.Goal{Text: "g"}); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("CreateGoal: %v", err)
	}
	if err := live.(core.GoalClearer).ClearGoal(ctx, "g"); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("ClearGoal: %v", err)
	}
	if _, err := live.(core.Compactor).Compact(ctx, ""); !errors.Is(err, core.ErrUnsupported) || core.ErrorCode(err) != core.CodeUnsupported {
		t.Errorf("Compact: %v", err)
	}
	if l, err := h.Resume(ctx, core.ResumeRequest{NativeID: "n1"}, nil); !errors.Is(err, core.ErrUnsupported) || l != nil {
		t.Errorf("Resume: %v", err)
	}
	if _, err := h.Attachment(ctx, "n1", "r"); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("Attachment: %v", err)
	}
	// Advertised, but the client's probe said it is unavailable.
	if err := live.Rename(ctx, "t"); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("Rename: %v", err)
	}
	if len(fc.calls) != before {
		t.Errorf("refused operations reached the client: %v", fc.calls[before:])
	}
}

func TestProbeFailureCountsEverythingMissing(t *testing.T) {
	for name, h := range map[string]handler{
		"error reply": func(context.Context, json.RawMessage) (any, error) {
			return nil, &jsonrpc2.Error{Code: -32000, Message: "host is restarting"}
		},
		"panic": func(context.Context, json.RawMessage) (any, error) { panic("client bug") },
		"hang": func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	} {
		t.Run(name, func(t *testing.T) {
			fc := newFakeCaller()
			fc.on("host/probe", h)
			host := rpchost.New(fc, "", allCaps(), rpchost.WithProbeTimeout(50*time.Millisecond))
			p := host.Probe(context.Background())
			if p.Harness != rpchost.DefaultHarness || len(p.Capabilities) != len(allCaps()) {
				t.Fatalf("probe %+v", p)
			}
			for _, c := range p.Capabilities {
				if c.Available || !strings.Contains(c.Detail, "host/probe failed") {
					t.Errorf("%s: %+v; want missing with the probe failure as detail", c.Name, c)
				}
			}
		})
	}
}

func TestResumeHonesty(t *testing.T) {
	ctx := context.Background()
	t.Run("other id", func(t *testing.T) {
		fc := newFakeCaller()
		fc.on("host/native.resume", func(context.Context, json.RawMessage) (any, error) {
			return schema.HostSessionResumeResult{NativeID: "someone-else"}, nil
		})
		fc.on("host/session.close", ack)
		h := rpchost.New(fc, "fh", allCaps())
		live, err := h.Resume(ctx, core.ResumeRequest{NativeID: "mine"}, nil)
		var re *core.ResumeError
		if live != nil || !errors.As(err, &re) || !strings.Contains(re.NativeText, "someone-else") {
			t.Fatalf("live=%v err=%v; want a *core.ResumeError naming the other id", live != nil, err)
		}
		if fc.sent("host/session.close") != 1 || !strings.Contains(string(fc.params["host/session.close"][0]), "someone-else") {
			t.Errorf("the session the client opened instead was not closed: %v", fc.calls)
		}
	})
	t.Run("client error", func(t *testing.T) {
		fc := newFakeCaller()
		fc.on("host/native.resume", func(context.Context, json.RawMessage) (any, error) {
			// As the rpc package's Caller returns it.
			return nil, core.E(core.CodeHarness, "host/native.resume: the client answered -32004 thread gone",
				&jsonrpc2.Error{Code: -32004, Message: "thread gone"})
		})
		h := rpchost.New(fc, "fh", allCaps())
		live, err := h.Resume(ctx, core.ResumeRequest{NativeID: "mine"}, nil)
		var re *core.ResumeError
		if live != nil || !errors.As(err, &re) || re.NativeText != "thread gone" {
			t.Fatalf("live=%v err=%v; want a *core.ResumeError with the client's text", live != nil, err)
		}
	})
	t.Run("same id", func(t *testing.T) {
		fc := newFakeCaller()
		var h *rpchost.Host
		fc.on("host/native.resume", func(context.Context, json.RawMessage) (any, error) {
			// The client replays a status while resuming.
			notify(t, h, schema.HostEventNotification{NativeID: "mine",
				Entry: &schema.HostEntry{Kind: "session.status", Payload: json.RawMessage(`{"status":"resumed"}`)}})
			return schema.HostSessionResumeResult{NativeID: "mine"}, nil
		})
		h = rpchost.New(fc, "fh", allCaps())
		var s sinkLog
		live, err := h.Resume(ctx, core.ResumeRequest{NativeID: "mine"}, s.sink)
		if err != nil || live.NativeID() != "mine" {
			t.Fatalf("Resume: %v", err)
		}
		if ev := s.all(); len(ev) != 1 || ev[0].Entry == nil || ev[0].Entry.Kind != core.KindSessionStatus {
			t.Fatalf("events during resume: %+v", ev)
		}
		if _, err := h.Resume(ctx, core.ResumeRequest{NativeID: "mine"}, nil); core.ErrorCode(err) != core.CodeBusy {
			t.Errorf("resuming a live session twice: %v, want busy", err)
		}
	})
}

func TestEventRouting(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCaller()
	var h *rpchost.Host
	fc.on("host/session.create", func(context.Context, json.RawMessage) (any, error) {
		// An event that arrives before the create reply is kept, not lost.
		notify(t, h, schema.HostEventNotification{NativeID: "n1", Model: "m-early"})
		return schema.HostSessionCreateResult{NativeID: "n1"}, nil
	})
	fc.on("host/session.prompt", func(context.Context, json.RawMessage) (any, error) {
		notify(t, h, schema.HostEventNotification{NativeID: "n1",
			Entry: &schema.HostEntry{Kind: "assistant.message", Payload: json.RawMessage(`{"text":"hi"}`), NativeID: "a1"}})
		return schema.HostSessionPromptResult{StopReason: "end_turn"}, nil
	})
	var logs logBuf
	h = rpchost.New(fc, "fh", allCaps(), rpchost.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	var s sinkLog
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: "/w"}, s.sink)
	if err != nil {
		t.Fatal(err)
	}
	if ev := s.all(); len(ev) != 1 || ev[0].Model != "m-early" {
		t.Fatalf("early event: %+v", ev)
	}
	res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "hello"}})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt: %v %v", res, err)
	}
	ev := s.all()
	if len(ev) != 2 || ev[1].Entry == nil || ev[1].Entry.Kind != core.KindAssistantMessage || ev[1].Entry.NativeID != "a1" {
		t.Fatalf("the turn's entry had not reached the sink when Prompt returned: %+v", ev)
	}

	notify(t, h, schema.HostEventNotification{NativeID: "n1", Gauge: &schema.Gauge{Used: 10, Size: 100}})
	notify(t, h, schema.HostEventNotification{NativeID: "n1",
		Entry: &schema.HostEntry{Kind: "assistant.message", Payload: json.RawMessage(`{"txt":"typo"}`), NativeID: "bad1"}})
	notify(t, h, schema.HostEventNotification{NativeID: "n1",
		Entry: &schema.HostEntry{Kind: "tool.teleported", Payload: json.RawMessage(`{"x":1}`)}})
	notify(t, h, schema.HostEventNotification{NativeID: "ghost", Model: "m"})
	h.HostEvent(ctx, json.RawMessage(`{"nativeId": 7`))
	ev = s.wait(t, 5)[2:]
	if len(ev) != 3 {
		t.Fatalf("events %+v; want gauge and two kept entries (ghost and malformed dropped)", ev)
	}
	if ev[0].Gauge == nil || *ev[0].Gauge != (core.Gauge{Used: 10, Size: 100}) {
		t.Errorf("gauge %+v", ev[0])
	}
	for i, e := range ev[1:] {
		if e.Entry == nil || e.Entry.Kind != core.KindHarnessEvent || e.Entry.Validate() != nil {
			t.Fatalf("invalid entry %d not kept as a valid harness.event: %+v", i, e.Entry)
		}
	}
	if !bytes.Contains(ev[1].Entry.Payload, []byte("typo")) || !bytes.Contains(ev[2].Entry.Payload, []byte("tool.teleported")) {
		t.Errorf("kept entries lost the client's payload: %s / %s", ev[1].Entry.Payload, ev[2].Entry.Payload)
	}
	if !strings.Contains(logs.String(), "ghost") || !strings.Contains(logs.String(), "does not decode") {
		t.Errorf("dropped events not logged:\n%s", logs.String())
	}

	notify(t, h, schema.HostEventNotification{NativeID: "n1", Exit: &schema.HostExit{ExitCode: 3, Error: "crashed"}})
	select {
	case <-live.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done is not closed after the exit event")
	}
	if x := live.Exit(); x.Code != 3 || x.Err != "crashed" {
		t.Errorf("Exit %+v", x)
	}
	if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "again"}}); core.ErrorCode(err) != core.CodeUnavailable {
		t.Errorf("Prompt after exit: %v, want unavailable", err)
	}
	n := len(s.all())
	notify(t, h, schema.HostEventNotification{NativeID: "n1", Model: "late"})
	if strings.Count(logs.String(), "does not drive") != 2 || len(s.all()) != n {
		t.Error("an event after the exit reached the sink instead of being dropped with a log line")
	}
	if err := live.Close(ctx); err != nil || fc.sent("host/session.close") != 0 {
		t.Errorf("Close after exit: %v (close sent %d times; want none)", err, fc.sent("host/session.close"))
	}
}

func TestClientErrorsMapped(t *testing.T) {
	ctx := context.Background()
	wrapped := func(code jsonrpc2.Code, msg string) error {
		we := &jsonrpc2.Error{Code: code, Message: msg}
		return core.E(core.CodeHarness, "the client answered", we)
	}
	for _, c := range []struct {
		name        string
		err         error
		code        core.Code
		text        string
		unsupported bool
	}{
		{"error reply", &jsonrpc2.Error{Code: -32000, Message: "disk full"}, core.CodeHarness, "disk full", false},
		{"error reply via rpc", wrapped(-32000, "disk full"), core.CodeHarness, "disk full", false},
		{"unknown method", &jsonrpc2.Error{Code: jsonrpc2.MethodNotFound, Message: "Unhandled method"}, core.CodeUnavailable, "does not implement", true},
		{"unknown method via rpc", wrapped(jsonrpc2.MethodNotFound, "Unhandled method"), core.CodeUnavailable, "Unhandled method", true},
		{"cancelled by client", &jsonrpc2.Error{Code: -32800, Message: "cancelled"}, core.CodeCancelled, "cancelled", false},
		{"connection gone", errors.New("write |1: broken pipe"), core.CodeUnavailable, "unreachable", false},
		{"rpc domain error", core.Errorf(core.CodeTimeout, "slow"), core.CodeTimeout, "slow", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fc := newFakeCaller()
			fc.on("host/session.models", func(context.Context, json.RawMessage) (any, error) { return nil, c.err })
			h := rpchost.New(fc, "fh", allCaps())
			_, err := h.Models(ctx)
			if core.ErrorCode(err) != c.code || !strings.Contains(err.Error(), c.text) || errors.Is(err, core.ErrUnsupported) != c.unsupported {
				t.Fatalf("err %v (code %s); want code %s containing %q, unsupported=%v", err, core.ErrorCode(err), c.code, c.text, c.unsupported)
			}
		})
	}
	t.Run("cancelled caller", func(t *testing.T) {
		fc := newFakeCaller()
		fc.on("host/session.create", createHandler("n1"))
		h := rpchost.New(fc, "fh", allCaps())
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		live, err := h.CreateSession(cctx, core.CreateRequest{Cwd: "/w"}, nil)
		if live != nil || core.ErrorCode(err) != core.CodeCancelled || fc.sent("host/session.create") != 0 {
			t.Fatalf("live=%v err=%v sent=%d", live != nil, err, fc.sent("host/session.create"))
		}
	})
}

func TestPromptAndClose(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCaller()
	fc.on("host/session.create", createHandler("n1"))
	fc.on("host/session.close", ack)
	fc.on("host/session.prompt", func(context.Context, json.RawMessage) (any, error) {
		return schema.HostSessionPromptResult{StopReason: "max_tokens"}, nil
	})
	h := rpchost.New(fc, "fh", allCaps())
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: "/w", Preset: core.Preset{Name: "coder"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(fc.params["host/session.create"][0]), `"name":"coder"`) {
		t.Errorf("create params %s: the preset did not travel", fc.params["host/session.create"][0])
	}
	if _, err := live.Prompt(ctx, []core.Content{{Type: "video"}}); core.ErrorCode(err) != core.CodeInvalid || fc.sent("host/session.prompt") != 0 {
		t.Errorf("unknown content type: %v", err)
	}
	res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "x"}, {Type: "image", MediaType: "image/png", Data: "AAAA"}})
	if err != nil || res.StopReason != "max_tokens" {
		t.Fatalf("Prompt: %+v %v; want the client's stop reason", res, err)
	}
	if !strings.Contains(string(fc.params["host/session.prompt"][0]), `"mediaType":"image/png"`) {
		t.Errorf("prompt params %s", fc.params["host/session.prompt"][0])
	}
	if err := live.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-live.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	if fc.sent("host/session.close") != 1 {
		t.Errorf("host/session.close sent %d times", fc.sent("host/session.close"))
	}
	if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "x"}}); err == nil {
		t.Error("Prompt after Close succeeded")
	}
	if err := live.Close(ctx); err != nil || fc.sent("host/session.close") != 1 {
		t.Errorf("second Close: %v", err)
	}
}

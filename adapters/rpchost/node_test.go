package rpchost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/rpchost"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// nodeHarness is the name the Node host is started with.
const nodeHarness = "node-host"

// nodeCapabilities is what the Node host implements and advertises.
var nodeCapabilities = []string{core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory,
	core.CapSessionModels, core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel, core.CapSessionRename,
	core.CapWorkspaceList, core.CapWorkspaceArchive, core.CapPresetList, core.CapGoalCreate, core.CapGoalPause,
	core.CapAttachment, core.CapGoalClear, core.CapNativeResume, core.CapCompactCommand,
	core.CapCompactionFocus, core.CapContextGauge}

// pipeRWC joins the child's stdout (read) and stdin (write).
type pipeRWC struct {
	io.Reader
	io.WriteCloser
	rc io.Closer
}

func (p pipeRWC) Close() error {
	return errors.Join(p.WriteCloser.Close(), p.rc.Close())
}

// connCaller is a Caller over a jsonrpc2 connection that behaves like the
// rpc package's: an error reply becomes a *core.Error with code harness
// wrapping the *jsonrpc2.Error, and a cancelled ctx sends $/cancelRequest.
type connCaller struct {
	conn jsonrpc2.Conn
	mu   *sync.Mutex
	sent map[string]int
}

func newConnCaller(conn jsonrpc2.Conn) connCaller {
	return connCaller{conn: conn, mu: &sync.Mutex{}, sent: map[string]int{}}
}

// count returns how many times method was sent.
func (c connCaller) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent[method]
}

func (c connCaller) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	c.sent[method]++
	c.mu.Unlock()
	var out json.RawMessage
	id, err := c.conn.Call(ctx, method, params, &out)
	if err != nil {
		if ctx.Err() != nil {
			if id.IsValid() {
				if n, ok := id.Number(); ok {
					_ = c.conn.Notify(context.WithoutCancel(ctx), "$/cancelRequest", map[string]any{"id": n})
				}
			}
			return core.E(core.CodeCancelled, method+": cancelled", errors.Join(core.ErrCancelled, ctx.Err()))
		}
		var we *jsonrpc2.Error
		if errors.As(err, &we) {
			return core.E(core.CodeHarness, fmt.Sprintf("%s: the client answered %d %s", method, we.Code, we.Message), we)
		}
		return core.E(core.CodeUnavailable, method+": the client is unreachable", err)
	}
	if result != nil && len(out) > 0 {
		if err := json.Unmarshal(out, result); err != nil {
			return core.E(core.CodeHarness, method+": the client's result does not decode", err)
		}
	}
	return nil
}

// nodeHost is a running Node host and the rpchost.Host driving it.
type nodeHost struct {
	host   *rpchost.Host
	conn   jsonrpc2.Conn
	caller connCaller
	events *eventLog
}

// eventLog counts host/event notifications as the read loop hands them on.
type eventLog struct {
	mu  sync.Mutex
	raw []json.RawMessage
}

func (e *eventLog) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.raw)
}

func (e *eventLog) add(p json.RawMessage) {
	e.mu.Lock()
	e.raw = append(e.raw, p)
	e.mu.Unlock()
}

// testLogger writes the host's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// startNode starts clients/interop/host/host.mjs under node and returns the
// rpchost.Host driving it. host/event notifications are handed to
// Host.HostEvent synchronously on the connection's read loop, as the rpc
// server does. A missing node fails the test.
func startNode(t *testing.T, capabilities []string) *nodeHost {
	t.Helper()
	node := adaptertest.FindBinary(t, "node")
	script := filepath.Join(adaptertest.RepoRoot(t), "clients", "interop", "host", "host.mjs")
	cmd := exec.Command(node, script, "--harness", nodeHarness)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	var stderrMu sync.Mutex
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		stderrMu.Lock()
		defer stderrMu.Unlock()
		return stderr.Write(p)
	})
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node host: %v", err)
	}
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(pipeRWC{Reader: stdout, WriteCloser: stdin, rc: stdout}))
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	caller := newConnCaller(conn)
	nh := &nodeHost{conn: conn, caller: caller, events: &eventLog{},
		host: rpchost.New(caller, nodeHarness, capabilities, rpchost.WithLogger(logger))}
	ctx, stop := context.WithCancel(context.Background())
	conn.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if req.Method() == "host/event" {
			p := append(json.RawMessage(nil), req.Params()...)
			nh.events.add(p)
			nh.host.HostEvent(ctx, p)
			return nil, nil
		}
		if !req.IsCall() {
			return nil, nil
		}
		return nil, jsonrpc2.NewError(jsonrpc2.MethodNotFound, "the test client answers no "+req.Method())
	})
	t.Cleanup(func() {
		stop()
		_ = stdin.Close() // the host exits when its input ends
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Log("DEBUG node did not exit")
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = conn.Close()
		if t.Failed() {
			stderrMu.Lock()
			t.Logf("node host stderr:\n%s", stderr.String())
			stderrMu.Unlock()
		}
	})
	return nh
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestConformanceOverNode runs the adapter conformance suite over a real
// vscode-jsonrpc client acting as session host.
func TestConformanceOverNode(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		New:     func(t *testing.T) core.BridgeHost { return startNode(t, nodeCapabilities).host },
		Claims:  nodeCapabilities,
		Timeout: time.Minute,
		Expect: func(t *testing.T, entries []core.NewEntry) {
			// The scripted host answers "hello" with a greeting naming itself.
			for _, e := range entries {
				if e.Kind == core.KindAssistantMessage && bytes.Contains(e.Payload, []byte(nodeHarness)) {
					return
				}
			}
			t.Errorf("no assistant.message from %s among %d entries", nodeHarness, len(entries))
		},
	})
}

// TestNodeProbeAdvertisedOnly: a capability the Node host implements but the
// client did not advertise in initialize is reported missing and refused
// before anything is sent.
func TestNodeProbeAdvertisedOnly(t *testing.T) {
	var caps []string
	for _, c := range nodeCapabilities {
		if c != core.CapCompactCommand && c != core.CapGoalClear {
			caps = append(caps, c)
		}
	}
	nh := startNode(t, caps)
	ctx := context.Background()
	p := nh.host.Probe(ctx)
	if p.Harness != nodeHarness || p.Version == "" || p.Binary == "" {
		t.Fatalf("probe %+v: want the host's harness, binary and version", p)
	}
	for _, name := range []string{core.CapCompactCommand, core.CapGoalClear, core.CapHistoryWindow} {
		if p.Has(name) {
			t.Errorf("%s reported available", name)
		}
	}
	if len(p.Missing(core.RequiredCapabilities...)) != 0 {
		t.Fatalf("required missing: %v", p.Missing(core.RequiredCapabilities...))
	}
	for _, c := range p.Capabilities {
		if c.Name == core.CapHistoryWindow && c.Detail == "" {
			t.Errorf("session.historyWindow: no detail")
		}
	}
	live, err := nh.host.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(ctx)
	if _, err := live.(core.Compactor).Compact(ctx, "x"); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("Compact: %v, want ErrUnsupported", err)
	}
	if err := live.(core.GoalClearer).ClearGoal(ctx, "g"); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("ClearGoal: %v, want ErrUnsupported", err)
	}
	if n := nh.caller.count("host/compaction.command") + nh.caller.count("host/goal.clear"); n != 0 {
		t.Fatalf("refused operations reached the client %d times", n)
	}
	// The host's own error text surfaces as a harness error.
	err = live.(core.GoalHost).PauseGoal(ctx, "no-such-goal")
	if core.ErrorCode(err) != core.CodeHarness || !containsStr(err.Error(), "goal no-such-goal not found") {
		t.Fatalf("PauseGoal(unknown): %v, want harness error with the client's text", err)
	}
	// A method the client does not implement is unavailable (and unsupported).
	err = nh.host.ArchiveSession(ctx, live.NativeID())
	if err != nil {
		t.Fatalf("ArchiveSession: %v", err)
	}
	var res schema.HostAck
	err = nh.caller.Call(ctx, "host/no.such", nil, &res)
	var we *jsonrpc2.Error
	if !errors.As(err, &we) || we.Code != jsonrpc2.MethodNotFound {
		t.Fatalf("unknown method over the wire: %v, want -32601", err)
	}
}

func containsStr(s, sub string) bool { return bytes.Contains([]byte(s), []byte(sub)) }

// TestSinkMayCallTheClient: a sink that calls the client back while an event
// is being delivered (the service probes the host when a gauge arrives) gets
// its answer: delivery does not hold the connection's read loop.
func TestSinkMayCallTheClient(t *testing.T) {
	nh := startNode(t, nodeCapabilities)
	ctx := context.Background()
	var mu sync.Mutex
	var probes []core.Probe
	sink := func(ev core.Event) {
		if ev.Gauge == nil {
			return
		}
		p := nh.host.Probe(ctx)
		mu.Lock()
		probes = append(probes, p)
		mu.Unlock()
	}
	live, err := nh.host.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, sink)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(ctx)
	if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "say hi"}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(probes) != 1 {
		t.Fatalf("%d probes from the sink by the time Prompt returned; want 1 (the turn's gauge)", len(probes))
	}
	if missing := probes[0].Missing(nodeCapabilities...); len(missing) != 0 {
		t.Fatalf("the probe made from inside the sink failed: missing %v (%+v)", missing, probes[0].Capabilities[0])
	}
}

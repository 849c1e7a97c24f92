package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core/testhome"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// binPath is the bridge binary built once for the end-to-end tests.
var binPath string

func TestMain(m *testing.M) {
	cleanupHome, err := testhome.Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "isolating the test home:", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "bridge-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "bridge")
	// The user's own configuration file must not change what the tests
	// see: point XDG_CONFIG_HOME at an empty folder.
	if err := os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Built as README says editors should ship it: static (no cgo).
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building bridge: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	pgtest.Stop() // a PostgreSQL cluster a test started (storepg_test.go)
	os.RemoveAll(dir)
	cleanupHome()
	os.Exit(code)
}

// wireMsg and wireError are messages and errors as the test client sees
// them.
type (
	wireMsg   = rpctest.Message
	wireError = rpctest.Error
)

// client is the test client (rpctest) on a server process's stdio (or a
// WebSocket of bridge web), with the process.
type client struct {
	*rpctest.Client
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *strings.Builder
}

// replyWait bounds the wait for one reply. A prompt through a real harness
// takes seconds; on a two-core machine loaded by other work one took over a
// minute, so the bound only catches a reply that never comes. noteWait
// bounds the wait for an awaited notification.
const (
	replyWait = 5 * time.Minute
	noteWait  = 60 * time.Second
)

// clientOptions are the client's options, saying stderr on a failure.
func clientOptions(stderr *strings.Builder, mu *sync.Mutex) rpctest.Options {
	return rpctest.Options{ReplyWait: replyWait, NoteWait: noteWait, Diagnostics: func() string {
		mu.Lock()
		defer mu.Unlock()
		return stderr.String()
	}}
}

// startBridge runs `bridge serve` on dataDir with extra environment.
func startBridge(t testing.TB, dataDir string, env ...string) *client {
	return startProcess(t, exec.Command(binPath, "--data-dir", dataDir, "serve"), env...)
}

// startProcess runs an LSP-framed JSON-RPC server command.
func startProcess(t testing.TB, cmd *exec.Cmd, env ...string) *client {
	t.Helper()
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedWriter{b: &strings.Builder{}}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &client{Client: rpctest.NewFramed(t, stdout, stdin, clientOptions(stderr.b, &stderr.mu)), t: t, cmd: cmd, stdin: stdin, stderr: stderr.b}
	t.Cleanup(func() {
		_ = c.stdin.Close()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Logf("bridge still running 10 s after its input closed; killed")
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	return c
}

type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// sendWithID sends a request with the given raw JSON id.
func (c *client) sendWithID(rawID, method string, params any) {
	c.Send(json.RawMessage(rawID), method, params)
}

// call sends a request, waits for the reply and decodes a successful
// result into out.
func (c *client) call(method string, params, out any) *wireError {
	c.t.Helper()
	m := c.Call(method, params)
	if m.Error != nil {
		return m.Error
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s: decoding result %s: %v", method, m.Result, err)
		}
	}
	return nil
}

// awaitNote waits for a notification or request from the server matching
// pred and returns it.
func (c *client) awaitNote(what string, pred func(wireMsg) bool) wireMsg {
	c.t.Helper()
	return c.Await(what+" notification", func(m wireMsg) bool { return !m.IsReply() && pred(m) })
}

// notes returns the notifications and requests from the server so far,
// in arrival order.
func (c *client) notes() []wireMsg {
	var out []wireMsg
	for _, m := range c.Messages() {
		if !m.IsReply() {
			out = append(out, m)
		}
	}
	return out
}

// initialize runs the LSP handshake with work-done progress and opts.
func (c *client) initialize(opts *schema.InitializationOptions) {
	c.t.Helper()
	c.initializeWith(schema.ClientCapabilities{Window: &schema.WindowClientCapabilities{WorkDoneProgress: true}}, opts)
}

// initializeWith runs the LSP handshake declaring capabilities caps.
func (c *client) initializeWith(caps schema.ClientCapabilities, opts *schema.InitializationOptions) {
	c.t.Helper()
	pid := os.Getpid()
	res, err := c.Initialize(c.t.Context(), schema.InitializeParams{ProcessID: &pid, ClientInfo: &schema.ClientInfo{Name: "e2e"},
		Capabilities: caps, InitializationOptions: opts})
	if err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
	if res.ServerInfo.Name != "bridge" {
		c.t.Fatalf("serverInfo.name = %q, want bridge", res.ServerInfo.Name)
	}
	c.Initialized()
}

// exitCode sends shutdown (optionally) and exit and returns the exit code.
func (c *client) exit(shutdown bool) int {
	c.t.Helper()
	if shutdown {
		if err := c.Shutdown(c.t.Context()); err != nil {
			c.t.Fatalf("shutdown: %v", err)
		}
	}
	c.Exit()
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		c.t.Fatalf("server did not exit; stderr:\n%s", c.stderr.String())
	}
	err := c.cmd.Wait()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	c.t.Fatalf("wait: %v", err)
	return -1
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

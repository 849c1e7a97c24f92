package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core/testhome"
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

// wireMsg is any JSON-RPC message from the server.
type wireMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
	// NotesBefore, on a reply, is how many notifications arrived before it.
	NotesBefore int `json:"-"`
}

type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *wireError) dataCode() string {
	var d struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(e.Data, &d)
	return d.Code
}

// client is a minimal LSP-framed JSON-RPC client over the server's pipes,
// written here so tests can also send what a real client never would.
type client struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *strings.Builder

	mu      sync.Mutex
	nextID  int
	replies map[string]chan wireMsg
	notes   []wireMsg
	noteCh  chan struct{}
	done    chan struct{}
	wmu     sync.Mutex
	// ws, when set, sends one message over a WebSocket instead of stdin.
	ws func(body []byte)
	// onRequest, when set, answers the server's requests (result, or an
	// error); unset, they are answered "method not found".
	onRequest func(m wireMsg) (any, *wireError)
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
	c := &client{t: t, cmd: cmd, stdin: stdin, stderr: &strings.Builder{}, replies: map[string]chan wireMsg{},
		noteCh: make(chan struct{}, 1), done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{b: c.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go c.readLoop(bufio.NewReader(stdout))
	t.Cleanup(func() {
		_ = c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
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

func (c *client) readLoop(r *bufio.Reader) {
	defer close(c.done)
	for {
		n := -1
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				break
			}
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
				n, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if n < 0 {
			c.t.Errorf("frame without Content-Length from the server")
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if !c.deliver(body) {
			return
		}
	}
}

// deliver files one message from the server; false when it is not JSON.
func (c *client) deliver(body []byte) bool {
	{
		var m wireMsg
		if err := json.Unmarshal(body, &m); err != nil {
			c.t.Errorf("server sent invalid JSON: %v: %s", err, body)
			return false
		}
		c.mu.Lock()
		if m.Method != "" && len(m.ID) == 0 {
			c.notes = append(c.notes, m)
			select {
			case c.noteCh <- struct{}{}:
			default:
			}
		} else if m.Method != "" {
			c.notes = append(c.notes, m) // kept with the notifications, for awaitNote
			select {
			case c.noteCh <- struct{}{}:
			default:
			}
			if h := c.onRequest; h != nil {
				go func() {
					res, werr := h(m)
					reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
					if werr != nil {
						reply["error"] = werr
					} else {
						reply["result"] = res
					}
					c.writeRaw(mustJSON(reply))
				}()
			} else {
				// A request from the server: answer "method not found".
				go c.writeRaw(mustJSON(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "not supported by the test client"}}))
			}
		} else {
			m.NotesBefore = len(c.notes)
			ch := c.replies[string(m.ID)]
			if ch == nil {
				ch = make(chan wireMsg, 1)
				c.replies[string(m.ID)] = ch
			}
			ch <- m
		}
		c.mu.Unlock()
	}
	return true
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// writeRaw sends one frame with body as is.
func (c *client) writeRaw(body []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.ws != nil {
		c.ws(body)
		return
	}
	fmt.Fprintf(c.stdin, "Content-Length: %d\r\n\r\n", len(body))
	c.stdin.Write(body)
}

// send sends a request and returns its id (as the JSON text of the id).
func (c *client) send(method string, params any) string {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	c.sendWithID(strconv.Itoa(id), method, params)
	return strconv.Itoa(id)
}

// sendWithID sends a request with the given raw JSON id.
func (c *client) sendWithID(rawID, method string, params any) {
	msg := map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(rawID), "method": method}
	if params != nil {
		msg["params"] = params
	}
	c.writeRaw(mustJSON(msg))
}

func (c *client) notify(method string, params any) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	c.writeRaw(mustJSON(msg))
}

// replyWait bounds the wait for one reply. A prompt through a real harness
// takes seconds; on a two-core machine loaded by other work one took over a
// minute, so the bound only catches a reply that never comes.
const replyWait = 5 * time.Minute

// wait returns the reply to rawID.
func (c *client) wait(rawID string) wireMsg {
	c.t.Helper()
	c.mu.Lock()
	ch := c.replies[rawID]
	if ch == nil {
		ch = make(chan wireMsg, 1)
		c.replies[rawID] = ch
	}
	c.mu.Unlock()
	select {
	case m := <-ch:
		return m
	case <-time.After(replyWait):
		c.t.Fatalf("no reply to request %s within %s; server stderr:\n%s", rawID, replyWait, c.stderr.String())
	}
	return wireMsg{}
}

// call sends a request, waits for the reply and decodes a successful
// result into out.
func (c *client) call(method string, params, out any) *wireError {
	c.t.Helper()
	m := c.wait(c.send(method, params))
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

// mustCall is call that fails the test on an error reply.
func (c *client) mustCall(method string, params, out any) {
	c.t.Helper()
	if e := c.call(method, params, out); e != nil {
		c.t.Fatalf("%s: error %d %s (data %s)", method, e.Code, e.Message, e.Data)
	}
}

// awaitNote waits for a notification matching pred and returns it.
func (c *client) awaitNote(what string, pred func(wireMsg) bool) wireMsg {
	c.t.Helper()
	deadline := time.After(60 * time.Second)
	seen := 0
	for {
		c.mu.Lock()
		for ; seen < len(c.notes); seen++ {
			if pred(c.notes[seen]) {
				m := c.notes[seen]
				c.mu.Unlock()
				return m
			}
		}
		c.mu.Unlock()
		select {
		case <-c.noteCh:
		case <-deadline:
			c.t.Fatalf("no %s notification; server stderr:\n%s", what, c.stderr.String())
		}
	}
}

// notesOf returns the notifications with method received so far.
func (c *client) notesOf(method string) []wireMsg {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []wireMsg
	for _, n := range c.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// initialize runs the LSP handshake.
func (c *client) initialize(opts map[string]any) {
	c.t.Helper()
	c.initializeWith(map[string]any{"window": map[string]any{"workDoneProgress": true}}, opts)
}

// initializeWith runs the LSP handshake declaring capabilities caps.
func (c *client) initializeWith(caps, opts map[string]any) {
	c.t.Helper()
	params := map[string]any{"processId": os.Getpid(), "clientInfo": map[string]any{"name": "e2e"}, "capabilities": caps}
	if opts != nil {
		params["initializationOptions"] = opts
	}
	var res struct {
		ServerInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	c.mustCall("initialize", params, &res)
	if res.ServerInfo.Name != "bridge" {
		c.t.Fatalf("serverInfo.name = %q, want bridge", res.ServerInfo.Name)
	}
	c.notify("initialized", map[string]any{})
}

// exitCode sends shutdown (optionally) and exit and returns the exit code.
func (c *client) exit(shutdown bool) int {
	c.t.Helper()
	if shutdown {
		c.mustCall("shutdown", nil, nil)
	}
	c.notify("exit", nil)
	select {
	case <-c.done:
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

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// webProc is a running `bridge web`.
type webProc struct {
	cmd    *exec.Cmd
	line   string // the first stdout line
	base   string // http://127.0.0.1:PORT
	token  string
	stderr *lockedWriter
}

var webLine = regexp.MustCompile(`^Bridge WebUI: (http://127\.0\.0\.1:[0-9]+)/#token=([0-9A-Za-z_-]+)$`)

// startWeb runs `bridge web` on dataDir and reads its first line.
func startWeb(t testing.TB, dataDir string, env ...string) *webProc {
	t.Helper()
	cmd := exec.Command(binPath, "web", "--data-dir", dataDir, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := &webProc{cmd: cmd, stderr: &lockedWriter{b: &strings.Builder{}}}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		w.line = strings.TrimRight(line, "\n")
	case <-time.After(60 * time.Second):
		t.Fatalf("bridge web printed no line; stderr:\n%s", w.stderrText())
	}
	m := webLine.FindStringSubmatch(w.line)
	if m == nil {
		t.Fatalf("first line %q is not \"Bridge WebUI: URL\" with a loopback URL and a token; stderr:\n%s", w.line, w.stderrText())
	}
	w.base, w.token = m[1], m[2]
	return w
}

func (w *webProc) stderrText() string {
	w.stderr.mu.Lock()
	defer w.stderr.mu.Unlock()
	return w.stderr.b.String()
}

// wsURL is the /rpc address with token tok.
func (w *webProc) wsURL(tok string) string {
	return "ws" + strings.TrimPrefix(w.base, "http") + "/rpc?token=" + tok
}

// dial opens /rpc with the right token and returns a JSON-RPC client on it.
func (w *webProc) dial(t testing.TB) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, w.wsURL(w.token), nil)
	if err != nil {
		t.Fatalf("dial /rpc: %v (%v)", err, resp)
	}
	conn.SetReadLimit(-1)
	send := func(body []byte) error {
		if err := conn.Write(context.Background(), websocket.MessageText, body); err != nil {
			t.Logf("websocket write: %v", err)
		}
		return nil
	}
	var mu sync.Mutex
	c := &client{t: t, stderr: &strings.Builder{}}
	c.Client = rpctest.New(t, send, clientOptions(c.stderr, &mu))
	go func() {
		var buf bytes.Buffer // reused: Deliver copies what it keeps
		for {
			typ, r, err := conn.Reader(context.Background())
			if err != nil {
				c.End(err)
				return
			}
			buf.Reset()
			if _, err := buf.ReadFrom(r); err != nil {
				c.End(err)
				return
			}
			if typ != websocket.MessageText {
				c.End(&rpctest.ProtocolError{Reason: "server sent a non-text WebSocket message"})
				return
			}
			if err := c.Deliver(buf.Bytes()); err != nil {
				c.End(err)
				return
			}
		}
	}()
	t.Cleanup(func() { _ = conn.CloseNow() })
	return c
}

// httpStatus sends a GET (or an upgrade when upgrade is set) and returns
// the status code.
func httpStatus(t *testing.T, url string, header map[string]string, upgrade bool) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if upgrade {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, resp.Header, "" // the body is the WebSocket
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, string(body)
}

// TestWebSecurity: the token, the Origin and the Host rules, and a
// non-loopback --listen refused.
func TestWebSecurity(t *testing.T) {
	w := startWeb(t, t.TempDir())
	rpcURL := w.base + "/rpc"

	// The page's scripts (the inline one that opens /rpc early, and the
	// WebUI's app.js, by its integrity attribute) and its inline stylesheet
	// are allowed by their hashes only: no 'self' script, no 'unsafe-inline'.
	code, h, body := httpStatus(t, w.base+"/", nil, false)
	csp := h.Get("Content-Security-Policy")
	if code != 200 || !regexp.MustCompile(`script-src 'sha256-[A-Za-z0-9+/]{43}=' 'sha256-[A-Za-z0-9+/]{43}='; style-src 'sha256-[A-Za-z0-9+/]{43}=';`).MatchString(csp) ||
		strings.Contains(csp, "unsafe") || !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("GET /: %d, CSP %q", code, csp)
	}
	if strings.Contains(body, w.token) {
		t.Fatal("the page carries the token: static files must carry no data")
	}
	for name, url := range map[string]string{
		"no token":    rpcURL,
		"empty token": rpcURL + "?token=",
		"wrong token": rpcURL + "?token=" + strings.Repeat("0", len(w.token)),
		"prefix":      rpcURL + "?token=" + w.token[:len(w.token)-1],
	} {
		if code, _, _ := httpStatus(t, url, nil, true); code != http.StatusUnauthorized {
			t.Errorf("/rpc with %s: %d, want 401", name, code)
		}
	}
	good := rpcURL + "?token=" + w.token
	port := w.base[strings.LastIndex(w.base, ":")+1:]
	for _, origin := range []string{"http://evil.example", "http://127.0.0.1:1", "https://127.0.0.1:" + port, "null"} {
		if code, _, _ := httpStatus(t, good, map[string]string{"Origin": origin}, true); code != http.StatusForbidden {
			t.Errorf("upgrade with Origin %q: %d, want 403", origin, code)
		}
	}
	for _, origin := range []string{"", w.base, "http://localhost:" + port} {
		hdr := map[string]string{}
		if origin != "" {
			hdr["Origin"] = origin
		}
		if code, _, _ := httpStatus(t, good, hdr, true); code != http.StatusSwitchingProtocols {
			t.Errorf("upgrade with the token and Origin %q: %d, want 101", origin, code)
		}
	}
	// DNS rebinding: a name that resolves to 127.0.0.1 but is not ours.
	for _, host := range []string{"evil.example:" + port, "evil.example", "10.0.0.1:" + port} {
		for _, url := range []string{w.base + "/", good} {
			if code, _, _ := httpStatus(t, url, map[string]string{"Host": host}, url == good); code != http.StatusForbidden {
				t.Errorf("GET %s with Host %q: %d, want 403", url, host, code)
			}
		}
	}
	if code, _, _ := httpStatus(t, w.base+"/", map[string]string{"Host": "localhost:" + port}, false); code != 200 {
		t.Errorf("Host localhost: %d, want 200", code)
	}

	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:8080", "[::]:0", "example.com:80"} {
		out, errOut, code := runCLI(t, nil, "web", "--data-dir", t.TempDir(), "--listen", addr)
		if code != 2 || !strings.Contains(errOut, "loopback") || out != "" {
			t.Errorf("--listen %s: exit %d, stdout %q, stderr %q; want exit 2 naming loopback", addr, code, out, errOut)
		}
	}
}

// TestWebTokenFromEnvironment: BRIDGE_WEB_TOKEN fixes the token.
func TestWebTokenFromEnvironment(t *testing.T) {
	w := startWeb(t, t.TempDir(), "BRIDGE_WEB_TOKEN=my-fixed-token_1")
	if w.token != "my-fixed-token_1" {
		t.Fatalf("token %q, want BRIDGE_WEB_TOKEN's", w.token)
	}
	c := w.dial(t)
	c.initialize(nil)
	_, err := c.SessionList(t.Context(), schema.SessionListParams{})
	must(t, "session/list", err)
}

// TestWebRPC: the stdio contract over WebSocket, two tabs sharing one
// service and database; shutdown and exit end one connection only. On
// both stores.
func TestWebRPC(t *testing.T) { eachStore(t, testWebRPC) }

func testWebRPC(t *testing.T, st storeKind) {
	w := startWeb(t, st.dataDir(t, nil))
	a, b := w.dial(t), w.dial(t)
	ctx := t.Context()
	if _, err := a.SessionList(ctx, schema.SessionListParams{}); rpctest.AsError(err) == nil || rpctest.AsError(err).Code != -32002 {
		t.Fatalf("request before initialize: %v, want -32002", err)
	}
	a.initialize(nil)
	b.initialize(nil)

	// Bad messages are answered and the connection carries on.
	a.WriteBody([]byte(`{"jsonrpc":"2.0","id":77,"method":`))
	if m := a.Reply("null"); m.Error == nil || m.Error.Code != -32700 {
		t.Fatalf("malformed JSON: %+v, want -32700", m)
	}
	a.WriteBody([]byte(`[{"jsonrpc":"2.0","id":78,"method":"session/list"}]`))
	if m := a.Reply("null"); m.Error == nil || m.Error.Code != -32600 {
		t.Fatalf("batch: %+v, want -32600", m)
	}
	if e := a.call("no/such", json.RawMessage(`{}`), nil); e == nil || e.Code != -32601 {
		t.Fatalf("unknown method: %+v, want -32601", e)
	}
	if _, err := a.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: "s_missing"}); rpctest.AsError(err) == nil || rpctest.AsError(err).DataCode() != "not_found" {
		t.Fatalf("unknown session: %v, want data.code not_found", err)
	}

	sid := createFake(t, a)
	pr, err := a.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: sid, Content: prompt("say hello from tab a")})
	must(t, "session/prompt", err)
	if pr.StopReason != "end_turn" {
		t.Fatalf("stopReason %q", pr.StopReason)
	}
	// The other tab sees the same session live and in the same database.
	rpctest.Await(b.Client, schema.NoticeSessionUpdate, func(u schema.SessionUpdateNotification) bool {
		return u.SessionID == sid && strings.Contains(string(u.Entry.Payload), "hello from tab a")
	})
	list, err := b.SessionList(ctx, schema.SessionListParams{})
	must(t, "session/list", err)
	if len(list.Items) != 1 || list.Items[0].SessionID != sid {
		t.Fatalf("tab b lists %+v, want tab a's session %s", list.Items, sid)
	}

	// Cancellation, as on stdio.
	a.Send(9001, "session/prompt", schema.SessionPromptParams{SessionID: sid, Content: prompt("hang")})
	_, err = a.SessionList(ctx, schema.SessionListParams{})
	must(t, "session/list", err)
	a.Notify(schema.NoticeCancelRequest.Name, schema.CancelParams{ID: schema.NumberID(9001)})
	if m := a.Reply(`9001`); m.Error == nil || m.Error.Code != -32800 {
		t.Fatalf("cancelled request: %+v, want -32800", m)
	}

	// shutdown and exit end tab a's connection only.
	must(t, "shutdown", a.Shutdown(ctx))
	if _, err := a.SessionList(ctx, schema.SessionListParams{}); rpctest.AsError(err) == nil || rpctest.AsError(err).Code != -32600 {
		t.Fatalf("request after shutdown: %v, want -32600", err)
	}
	a.Exit()
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("exit did not close tab a's WebSocket")
	}
	hist, err := b.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: sid})
	must(t, "session/history", err)
	if len(hist.Entries) < 2 {
		t.Fatalf("tab b after tab a left: %d entries", len(hist.Entries))
	}
	// A new tab still works: the service outlives every connection.
	c := w.dial(t)
	c.initialize(nil)
	_, err = c.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: sid, Content: prompt("say again")})
	must(t, "session/prompt", err)
}

// TestWebQueueChangedReachesEveryTab: a prompt one tab queues behind a
// running turn shows in every tab (session/queueChanged goes through the
// fan-out like session/update), and so does its leaving the queue. On
// both stores.
func TestWebQueueChangedReachesEveryTab(t *testing.T) {
	eachStore(t, testWebQueueChangedReachesEveryTab)
}

func testWebQueueChangedReachesEveryTab(t *testing.T, st storeKind) {
	w := startWeb(t, st.dataDir(t, nil))
	a, b := w.dial(t), w.dial(t)
	a.initialize(nil)
	b.initialize(nil)
	sid := createFake(t, a)
	a.Send(9101, "session/prompt", schema.SessionPromptParams{SessionID: sid, Content: prompt("hang")})
	rpctest.Await(b.Client, schema.NoticeSessionUpdate, func(u schema.SessionUpdateNotification) bool {
		return u.SessionID == sid && strings.Contains(string(u.Entry.Payload), "hang")
	})
	a.Send(9102, "session/prompt", schema.SessionPromptParams{SessionID: sid, Content: prompt("say queued in tab a")})
	for _, tab := range []*client{a, b} {
		rpctest.Await(tab.Client, schema.NoticeQueueChanged, func(n schema.QueueChangedNotification) bool {
			return n.SessionID == sid && len(n.Items) == 1 && n.Items[0].Text == "say queued in tab a"
		})
	}
	a.Notify(schema.NoticeCancelRequest.Name, schema.CancelParams{ID: schema.NumberID(9101)})
	if m := a.Reply(`9101`); m.Error == nil || m.Error.Code != -32800 {
		t.Fatalf("cancelled turn: %+v, want -32800", m)
	}
	rpctest.Await(b.Client, schema.NoticeQueueChanged, func(n schema.QueueChangedNotification) bool {
		return n.SessionID == sid && len(n.Items) == 0
	})
	if m := a.Reply(`9102`); m.Error != nil {
		t.Fatalf("the queued prompt: %+v", m.Error)
	}
}

// TestWebBinaryMessage: a binary WebSocket message is answered, not obeyed.
func TestWebBinaryMessage(t *testing.T) {
	w := startWeb(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, w.wsURL(w.token), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)); err != nil {
		t.Fatal(err)
	}
	_, data, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m wireMsg
	if err := json.Unmarshal(data, &m); err != nil || m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "text") {
		t.Fatalf("binary message: %s, want -32600 asking for text", data)
	}
	if err := conn.Close(websocket.StatusNormalClosure, ""); err != nil && !errors.Is(err, io.EOF) && websocket.CloseStatus(err) == -1 {
		t.Logf("close: %v", err)
	}
}

// TestReadmeRunCommand: README's run command (under <!-- run-command -->)
// is `bridge web`, and run as written (the built binary for `go run
// ./cmd/bridge`, a fresh data directory) it prints the URL and serves a page
// whose /rpc works with the printed token.
func TestReadmeRunCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- run-command -->\n```\n")
	if !ok {
		t.Fatal("README.md has no run command under <!-- run-command -->")
	}
	cmdLine, _, _ := strings.Cut(rest, "\n")
	args := strings.Fields(cmdLine)
	if len(args) < 4 || strings.Join(args[:3], " ") != "go run ./cmd/bridge" || args[3] != "web" {
		t.Fatalf("README's run command %q is not `go run ./cmd/bridge web …`", cmdLine)
	}
	args = args[3:]
	for i := range args {
		if i > 0 && args[i-1] == "--data-dir" {
			args[i] = t.TempDir()
		}
	}
	args = append(args, "--listen", "127.0.0.1:0")
	cmd := exec.Command(binPath, args...)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	m := webLine.FindStringSubmatch(strings.TrimRight(line, "\n"))
	if m == nil {
		t.Fatalf("first line %q", line)
	}
	w := &webProc{base: m[1], token: m[2], stderr: &lockedWriter{b: &strings.Builder{}}}
	if code, _, body := httpStatus(t, w.base+"/", nil, false); code != 200 || !strings.Contains(body, `<script type="module" src="app.js" integrity="sha256-`) {
		t.Fatalf("GET /: %d %q", code, body)
	}
	c := w.dial(t)
	c.initialize(nil)
	rep, err := c.BridgeDoctor(t.Context(), schema.DoctorParams{Harness: "fake"})
	must(t, "bridge/doctor", err)
	if len(rep.Adapters) != 1 || !rep.Adapters[0].OK {
		t.Fatalf("the fake harness is not usable: %+v", rep)
	}
}

// floodTurn runs a fake-harness turn that says lines messages of 60 KiB
// each, through c, and returns the session's id.
func floodTurn(t *testing.T, c *client, lines int) string {
	t.Helper()
	var script strings.Builder
	for i := range lines {
		fmt.Fprintf(&script, "say %04d %s\n", i, strings.Repeat("z", 60<<10))
	}
	sid := createFake(t, c)
	pr, err := c.SessionPrompt(t.Context(), schema.SessionPromptParams{SessionID: sid, Content: prompt(script.String())})
	must(t, "session/prompt", err)
	if pr.StopReason != "end_turn" {
		t.Fatalf("stopReason %q", pr.StopReason)
	}
	return sid
}

// TestWebStalledTabDelaysNoOther: two tabs, one of which stops reading its
// WebSocket right after initialize (a frozen or throttled tab). The other
// tab runs a turn whose notifications are far more than the stalled tab's
// socket buffers hold: it gets every one of them and its reply, while the
// stalled tab stays connected (its messages wait on its own queue); when
// the stalled tab reads again it gets every notification too, in order.
// Before per-connection queues, the fan-out wrote to the stalled tab
// directly: the working tab waited for that write to time out (30 s) and
// the stalled tab was disconnected.
func TestWebStalledTabDelaysNoOther(t *testing.T) {
	w := startWeb(t, t.TempDir())
	a := w.dial(t)
	a.initialize(nil)

	b := w.dialStalled(t)
	// From here on, tab b reads nothing until tab a is done.

	const lines = 100 // about 12 MB of notifications to each tab
	sid := floodTurn(t, a, lines)
	said := func(c func() []wireMsg) int {
		n := 0
		for _, m := range c() {
			if strings.Contains(string(m.Params), `"assistant.message"`) && strings.Contains(string(m.Params), sid) {
				n++
			}
		}
		return n
	}
	// The reply follows the turn's notifications on the same connection.
	if n := said(func() []wireMsg { return a.Sent("session/update") }); n != lines {
		t.Fatalf("the working tab got %d assistant entries, want %d", n, lines)
	}

	// Tab b reads at last: everything is there, in order.
	rctx, rcancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer rcancel()
	next := 0
	for next < lines {
		_, msg, err := b.Read(rctx)
		if err != nil {
			t.Fatalf("the stalled tab, reading after %d of %d assistant entries: %v (close status %d); bridge web stderr:\n%s",
				next, lines, err, websocket.CloseStatus(err), w.stderrText())
		}
		var m wireMsg
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatal(err)
		}
		var u schema.SessionUpdateNotification
		if m.Method != "session/update" || json.Unmarshal(m.Params, &u) != nil || u.SessionID != sid || u.Entry.Kind != "assistant.message" {
			continue
		}
		if want := fmt.Sprintf("%04d", next); !strings.Contains(string(u.Entry.Payload), want) {
			t.Fatalf("assistant entry %d of the stalled tab: %.60s…, want %s", next, u.Entry.Payload, want)
		}
		next++
	}
}

// dialStalled opens /rpc as a tab that will stop reading: it initializes,
// then the test reads nothing more from it until it chooses to. Its small
// receive buffer makes the server's writes stall after a few megabytes
// (the server's send buffer) rather than tens (an autotuned receive
// buffer).
func (w *webProc) dialStalled(t *testing.T) *websocket.Conn {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(128 << 10)
		}
		return c, err
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, _, err := websocket.Dial(ctx, w.wsURL(w.token), &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.CloseNow() })
	b.SetReadLimit(-1)
	send := func(body string) {
		if err := b.Write(ctx, websocket.MessageText, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`)
	if _, msg, err := b.Read(ctx); err != nil || !strings.Contains(string(msg), `"serverInfo"`) {
		t.Fatalf("initialize on the stalled tab: %s %v", msg, err)
	}
	send(`{"jsonrpc":"2.0","method":"initialized","params":{}}`)
	return b
}

// TestWebOverflowDisconnectsWithReason: with a small queue bound
// (BRIDGE_WEB_QUEUE_MESSAGES), a tab that stops reading while another runs
// a turn of about 24 MB overflows its queue; the working tab gets its whole
// turn; the stalled tab, reading again, gets a prefix of what was sent, a
// window/logMessage error saying why, and the close status 1008 with the
// same reason.
func TestWebOverflowDisconnectsWithReason(t *testing.T) {
	w := startWeb(t, t.TempDir(), "BRIDGE_WEB_QUEUE_MESSAGES=128")
	a := w.dial(t)
	a.initialize(nil)
	b := w.dialStalled(t)
	const lines = 200
	floodTurn(t, a, lines)
	n := 0
	for _, m := range a.Sent("session/update") {
		if strings.Contains(string(m.Params), `"assistant.message"`) {
			n++
		}
	}
	if n != lines {
		t.Fatalf("the working tab got %d assistant entries, want %d", n, lines)
	}
	if !strings.Contains(w.stderrText(), "a client stopped reading; closing its connection") {
		t.Fatalf("bridge web did not report the overflow; stderr:\n%s", w.stderrText())
	}

	rctx, rcancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer rcancel()
	var said string
	for {
		_, msg, err := b.Read(rctx)
		if err != nil {
			if said != "bridge: this client stopped reading and fell too far behind; reconnect and reload" {
				t.Fatalf("the connection ended (%v) after the log message %q", err, said)
			}
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != said {
				t.Fatalf("close %v, want 1008 with the reason %q", err, said)
			}
			return
		}
		if said != "" {
			t.Fatalf("a message after the log message: %.60s", msg)
		}
		var m wireMsg
		var p schema.LogMessageParams
		if json.Unmarshal(msg, &m) == nil && m.Method == schema.NoticeLogMessage.Name && json.Unmarshal(m.Params, &p) == nil && p.Type == schema.MessageError {
			said = p.Message
		}
	}
}

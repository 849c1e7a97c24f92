package webui_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core/testhome"
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
	const reply = "Hello, page: this is the fake model speaking through Claude Code."
	srv.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		return fakemodel.Reply{Text: reply}, true
	})
	root := t.TempDir()
	dataDir, cwd, home := filepath.Join(root, "data"), filepath.Join(root, "project"), filepath.Join(root, "home")
	for _, d := range []string{dataDir, cwd, filepath.Join(home, ".claude")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
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
	out := run(t, []string{"BRIDGE_BIN=" + binPath, "CHROMIUM=" + chromium, "CLAUDE_DATA_DIR=" + dataDir,
		"CLAUDE_CWD=" + cwd, "CLAUDE_REPLY=" + reply}, "node", "--test", "--test-concurrency=1", "test/")
	if !strings.Contains(out, "# fail 0") || !strings.Contains(out, "# skipped 0") || strings.Contains(out, "# pass 0") {
		t.Fatalf("browser tests:\n%s", out)
	}
	var claudeCalls int
	for _, r := range srv.Requests() {
		if r.API == "anthropic" {
			claudeCalls++
		}
	}
	if claudeCalls == 0 {
		t.Fatal("Claude Code never called the fake model server")
	}
}

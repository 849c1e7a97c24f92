package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// importers are the harnesses whose adapters import transcripts.
var importers = []string{"claude-code", "codex", "opencode", "fake", "dsh", "bridge"}

// runWatched is runCLI with a watchdog: a command that blocks (on a FIFO,
// on /dev/zero) is killed after a minute and reported as hanging, rather
// than hanging the test run. It is a hang detector, not a speed check.
func runWatched(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v: still running after a minute (blocked reading its input?)", args)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// sessionCount is how many sessions `bridge sessions --json` lists.
func sessionCount(t *testing.T, dir string) int {
	t.Helper()
	out, stderr, code := runWatched(t, nil, "--data-dir", dir, "sessions", "--json")
	if code != 0 {
		t.Fatalf("sessions: exit %d: %s", code, stderr)
	}
	var v struct {
		Items *[]json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Items == nil {
		t.Fatalf("sessions --json: %v: %s", err, out)
	}
	return len(*v.Items)
}

// TestImportRefusesWhatIsNotATranscript: every importer refuses, with a
// non-zero exit and a clear error and without adding anything, a file that
// is not a transcript of its harness (README.md, /etc/passwd), a kernel file
// holding the environment, a device that never ends, a FIFO nobody writes,
// and a folder.
func TestImportRefusesWhatIsNotATranscript(t *testing.T) {
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	readme, _ := filepath.Abs(filepath.Join("..", "..", "README.md"))
	inputs := map[string]string{
		"README.md":          readme,
		"/etc/passwd":        "/etc/passwd",
		"/proc/self/environ": "/proc/self/environ",
		"/dev/zero":          "/dev/zero",
		"/dev/stdin":         "/dev/stdin",
		"fifo":               fifo,
		"folder":             tmp,
	}
	dir := t.TempDir()
	for _, h := range importers {
		for name, path := range inputs {
			stdout, stderr, code := runWatched(t, []string{"BRIDGE_DSH_URL=http://127.0.0.1:9/api"}, "--data-dir", dir, "import", "--harness", h, path, "--json")
			if code == 0 {
				t.Errorf("%s importer accepted %s", h, name)
				continue
			}
			if !strings.Contains(stdout+stderr, `"code":"invalid"`) || len(stdout+stderr) > 600 {
				t.Errorf("%s importer on %s: want a short invalid error, got exit %d: %.600s", h, name, code, stdout+stderr)
			}
		}
	}
	if n := sessionCount(t, dir); n != 0 {
		t.Fatalf("refused imports recorded %d sessions", n)
	}
}

// TestImportHugeLine: a transcript with a 200 MB line is refused with an
// error naming the line limit, nothing is recorded, and the next import
// into the same data directory works.
func TestImportHugeLine(t *testing.T) {
	tmp := t.TempDir()
	good := filepath.Join("..", "..", "testdata", "claude-code", "transcript-with-compact-boundary.recorded.jsonl")
	head, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tmp, "huge.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(head)
	f.WriteString(`{"type":"user","uuid":"u-huge","message":{"role":"user","content":"`)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; i < 200; i++ {
		f.Write(chunk)
	}
	f.WriteString("\"}}\n")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, stderr, code := runWatched(t, nil, "--data-dir", dir, "import", "--harness", "claude-code", path)
	if code == 0 || !strings.Contains(stderr, "longer than the limit") || len(stderr) > 600 {
		t.Fatalf("200 MB line: exit %d: %.600s", code, stderr)
	}
	if n := sessionCount(t, dir); n != 0 {
		t.Fatalf("a refused import recorded %d sessions", n)
	}
	if _, stderr, code := runWatched(t, nil, "--data-dir", dir, "import", "--harness", "claude-code", good); code != 0 {
		t.Fatalf("import after the refusal: exit %d: %s", code, stderr)
	}
}

// TestReimportWithoutSessionIDAddsNothing: a Codex rollout whose
// session_meta line is garbled, and a DeepSeek Harness log whose session
// header is garbled, have no readable session id; importing the same bytes
// twice still finds the same session and adds nothing the second time.
func TestReimportWithoutSessionIDAddsNothing(t *testing.T) {
	root := filepath.Join("..", "..", "testdata")
	for _, c := range []struct{ harness, file string }{
		{"codex", "codex/rollout-manual-compact.recorded.jsonl"},
		{"dsh", "dsh/headless-turn.session.jsonl"},
	} {
		t.Run(c.harness, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, c.file))
			if err != nil {
				t.Fatal(err)
			}
			first, rest, _ := bytes.Cut(b, []byte("\n"))
			garbled := append(first[:len(first)/3:len(first)/3], []byte("\x00garbled\n")...)
			path := filepath.Join(t.TempDir(), "garbled.jsonl")
			if err := os.WriteFile(path, append(garbled, rest...), 0o600); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var outs [2]struct {
				SessionID string `json:"sessionId"`
				Entries   int    `json:"entries"`
			}
			for i := range outs {
				stdout, stderr, code := runWatched(t, []string{"BRIDGE_DSH_URL=http://127.0.0.1:9/api"},
					"--data-dir", dir, "import", "--harness", c.harness, path, "--json")
				if code != 0 {
					t.Fatalf("import %d: exit %d: %s", i+1, code, stderr)
				}
				if err := json.Unmarshal([]byte(stdout), &outs[i]); err != nil {
					t.Fatalf("import %d: %v: %s", i+1, err, stdout)
				}
			}
			if outs[0].Entries == 0 || outs[1].SessionID != outs[0].SessionID || outs[1].Entries != 0 {
				t.Fatalf("imports %+v: want one session, entries the first time and none the second", outs)
			}
			if n := sessionCount(t, dir); n != 1 {
				t.Fatalf("%d sessions after importing the same bytes twice, want 1", n)
			}
		})
	}
}

// TestImportRefusesAnotherHarnessTranscript: a transcript of one harness
// imported under another harness's name is refused and adds nothing.
func TestImportRefusesAnotherHarnessTranscript(t *testing.T) {
	root := filepath.Join("..", "..", "testdata")
	files := map[string]string{
		"claude-code": "claude-code/transcript-with-compact-boundary.recorded.jsonl",
		"codex":       "codex/rollout-manual-compact.recorded.jsonl",
		"opencode":    "opencode/export-after-summarize.recorded.json",
		"dsh":         "dsh/headless-turn.session.jsonl",
	}
	dir := t.TempDir()
	for _, h := range importers {
		for owner, file := range files {
			if owner == h {
				continue
			}
			stdout, stderr, code := runWatched(t, []string{"BRIDGE_DSH_URL=http://127.0.0.1:9/api"},
				"--data-dir", dir, "import", "--harness", h, filepath.Join(root, file), "--json")
			if code == 0 || !strings.Contains(stdout+stderr, `"code":"invalid"`) {
				t.Errorf("%s importer on a %s transcript: want refusal, got exit %d: %.400s", h, owner, code, stdout+stderr)
			}
		}
	}
	if n := sessionCount(t, dir); n != 0 {
		t.Fatalf("refused imports recorded %d sessions", n)
	}
}

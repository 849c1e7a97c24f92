package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/storage"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// runCLI runs the built binary with args and extra environment.
func runCLI(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	out, errb, code, err := runCLIErr(env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out, errb, code
}

// runCLIErr is runCLI for any goroutine: an error other than an exit code
// is returned.
func runCLIErr(env []string, args ...string) (string, string, int, error) {
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode(), nil
	}
	return out.String(), errb.String(), 0, err
}

// golden compares got (with the data directory replaced by $DATA, and this
// Bridge's schema version by $SCHEMA, so that a new migration changes no
// golden file) with testdata/golden/name.
func golden(t *testing.T, name, dataDir, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, dataDir, "$DATA")
	v := storage.KnownSchemaVersion()
	got = strings.ReplaceAll(got, fmt.Sprintf("(schema version %d)", v), "(schema version $SCHEMA)")
	got = strings.ReplaceAll(got, fmt.Sprintf(`"schemaVersion": %d`, v), `"schemaVersion": "$SCHEMA"`)
	path := filepath.Join("..", "..", "testdata", "golden", name)
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s missing (go test ./cmd/bridge -run Doctor -update writes it): %v", path, err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file %s (go test ./cmd/bridge -run Doctor -update rewrites it)\ngot:\n%s\nwant:\n%s", name, path, got, want)
	}
}

func TestDoctorGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		ok   bool
	}{
		// A harness without goals is not missing goals: they are not
		// applicable to it, and it is ok.
		{"doctor-fake-full", nil, true},
		{"doctor-fake-no-goals", []string{"BRIDGE_FAKE_MISSING=goal.create,goal.pause,goal.clear"}, true},
		{"doctor-fake-no-cancel", []string{"BRIDGE_FAKE_MISSING=session.cancel"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out, stderr, code := runCLI(t, c.env, "--data-dir", dir, "doctor", "--harness", "fake", "--json")
			// --harness names the adapter: exit 1 exactly when it cannot work.
			if (code == 0) != c.ok || (code != 0 && code != 1) {
				t.Fatalf("doctor exit %d (ok %v): %s", code, c.ok, stderr)
			}
			golden(t, c.name+".json", dir, out)
			if strings.Contains(out, `"ok": true`) != c.ok {
				t.Fatalf("ok should be %v:\n%s", c.ok, out)
			}
			text, _, _ := runCLI(t, c.env, "--data-dir", dir, "doctor", "--harness", "fake")
			golden(t, c.name+".txt", dir, text)
			verbose, _, _ := runCLI(t, c.env, "--data-dir", dir, "doctor", "--harness", "fake", "--verbose")
			golden(t, c.name+".verbose.txt", dir, verbose)
		})
	}
}

// TestDoctorUnknownHarness: a --harness this binary does not have is a
// usage error (exit 2) naming it.
func TestDoctorUnknownHarness(t *testing.T) {
	_, stderr, code := runCLI(t, nil, "--data-dir", t.TempDir(), "doctor", "--harness", "nope")
	if code != 2 || !strings.Contains(stderr, `"nope"`) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	out, _, code := runCLI(t, nil, "--data-dir", t.TempDir(), "doctor", "--harness", "nope", "--json")
	if ec, _ := jsonError(t, out); code != 2 || ec != "usage" {
		t.Fatalf("--json: exit %d, code %q", code, ec)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte("{\n  \"presets\": [\n    {\"name\": \"x\",}\n  ]\n}\n"), 0o600)
	_, stderr, code := runCLI(t, nil, "--data-dir", dir, "sessions")
	if code != 1 || !strings.Contains(stderr, "line 3") {
		t.Fatalf("a malformed config must name the line: exit %d, %q", code, stderr)
	}
	// The configuration enables fake explicitly, and its environment takes
	// session.cancel away: doctor says it cannot work and exits 1.
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"harnesses": {"fake": {"env": {"BRIDGE_FAKE_MISSING": "session.cancel"}}}, "presets": [{"name": "reviewer", "harness": "fake"}]}`), 0o600)
	out, stderr, code := runCLI(t, nil, "--data-dir", dir, "doctor", "--json")
	if code != 1 || !strings.Contains(out, `"session.cancel"`) || !strings.Contains(out, `"ok": false`) {
		t.Fatalf("harness env from the config file: exit %d %s %s", code, out, stderr)
	}
}

func TestDataDirPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "bridge")
	if _, stderr, code := runCLI(t, []string{"BRIDGE_DATA_DIR=" + dir}, "sessions", "--json"); code != 0 {
		t.Fatal(stderr)
	}
	for _, p := range []string{dir, filepath.Join(dir, DatabaseFile)} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if st.IsDir() {
			want = 0o700
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", p, st.Mode().Perm(), want)
		}
	}
}

// TestDoctorNeverPrintsConfiguredSecrets: a harness's configured environment
// may hold an API key; doctor (text and JSON) names the variables at most,
// never their values, and the Claude Code adapter still looks for
// transcripts under the real home (the configured HOME when there is one).
func TestDoctorNeverPrintsConfiguredSecrets(t *testing.T) {
	const secret = "sk-ant-secret-3f9c2a71"
	dir := t.TempDir()
	cfg := `{"harnesses": {"claude-code": {"env": {"ANTHROPIC_API_KEY": "` + secret + `", "ZZZ_TOKEN": "` + secret + `-2"}},
		"codex": {"env": {"OPENAI_API_KEY": "` + secret + `"}}, "opencode": {"env": {"OPENAI_API_KEY": "` + secret + `"}},
		"acp": {"env": {"ANTHROPIC_API_KEY": "` + secret + `"}}}}`
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := []string{"HOME=" + home, "CLAUDE_CONFIG_DIR="}
	for _, args := range [][]string{{"doctor"}, {"doctor", "--json"}, {"doctor", "--harness", "claude-code"}, {"doctor", "--harness", "claude-code", "--verbose"}, {"doctor", "--harness", "claude-code", "--json"}} {
		out, stderr, _ := runCLI(t, env, append([]string{"--data-dir", dir}, args...)...)
		if strings.Contains(out+stderr, secret) {
			t.Fatalf("%v printed a configured secret:\n%s\n%s", args, out, stderr)
		}
		if args[len(args)-1] == "--verbose" { // the details are in the verbose report
			if !strings.Contains(out, filepath.Join(home, ".claude", "projects")) || !strings.Contains(out, "ANTHROPIC_API_KEY, ZZZ_TOKEN") {
				t.Errorf("claude-code should look for transcripts under %s and name (only) its configured variables:\n%s", filepath.Join(home, ".claude"), out)
			}
		}
	}
}

// TestDoctorNotInstalled: with no harness program on PATH, doctor lists the
// adapters whose program is missing on one line and exits 0 (nothing
// enables them explicitly); --harness naming one says so in one line and
// exits 1; the configuration naming one makes the plain doctor exit 1.
func TestDoctorNotInstalled(t *testing.T) {
	empty := t.TempDir()
	env := []string{"PATH=" + empty}
	dir := t.TempDir()
	out, stderr, code := runCLI(t, env, "--data-dir", dir, "doctor")
	if code != 0 {
		t.Fatalf("doctor with nothing installed: exit %d, %s", code, stderr)
	}
	var absent string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "not installed: ") {
			absent = line
		}
	}
	for _, h := range []string{"claude-code", "codex", "opencode", "acp"} {
		if !strings.Contains(absent, h) {
			t.Errorf("the not-installed line %q does not name %s:\n%s", absent, h, out)
		}
	}
	if !strings.Contains(out, "fake ") || !strings.Contains(out, " ok") {
		t.Errorf("the in-process fake should be ok:\n%s", out)
	}
	out, stderr, code = runCLI(t, env, "--data-dir", dir, "doctor", "--harness", "opencode")
	if code != 1 || out != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "opencode is not installed") {
		t.Errorf("--harness opencode, not installed: exit %d, stdout %q, stderr %q; want 1 and one line", code, out, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"harnesses": {"codex": {"options": {}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, env, "--data-dir", dir, "doctor"); code != 1 || !strings.Contains(stderr, "codex is not installed") {
		t.Errorf("configured codex not installed: exit %d, stderr %q", code, stderr)
	}
}

// TestDoctorRealPrograms: with the real harness programs installed (the
// pinned npm packages), doctor says ok for each and exits 0, and so does
// `doctor --harness` for each, on data directories of their own. One at a
// time: each run mostly waits for the harness programs it starts, but the
// probes' own limits (30 s for `claude --help`, 60 s for `opencode
// --version`, Codex's protocol schema) were missed at load 30 with two runs
// at once. OpenCode is told not to reach the network, as in every other
// test.
func TestDoctorRealPrograms(t *testing.T) {
	bins := map[string]string{"claude-code": "claude", "codex": "codex", "opencode": "opencode", "acp": "claude-code-acp"}
	var dirs []string
	for _, b := range bins {
		dirs = append(dirs, filepath.Dir(adaptertest.FindBinary(t, b)))
	}
	env := []string{"PATH=" + strings.Join(dirs, ":") + ":" + os.Getenv("PATH")}
	cfg := []byte(`{"harnesses": {"opencode": {"env": {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_SHARE": "1",
		"NPM_CONFIG_REGISTRY": "http://127.0.0.1:9/", "BUN_CONFIG_REGISTRY": "http://127.0.0.1:9/"}}}}`)
	type run struct {
		harness     string // "" for the whole doctor
		dir         string
		out, stderr string
		code        int
		err         error
	}
	doctor := func(r *run) {
		if r.err = os.WriteFile(filepath.Join(r.dir, ConfigFile), cfg, 0o600); r.err != nil {
			return
		}
		args := []string{"--data-dir", r.dir, "doctor"}
		if r.harness != "" {
			args = append(args, "--harness", r.harness)
		}
		r.out, r.stderr, r.code, r.err = runCLIErr(env, args...)
	}
	whole := &run{dir: t.TempDir()}
	var single []*run
	for h := range bins {
		single = append(single, &run{harness: h, dir: t.TempDir()})
	}
	for _, r := range append([]*run{whole}, single...) {
		doctor(r)
	}
	for _, r := range append([]*run{whole}, single...) {
		if r.err != nil {
			t.Fatalf("doctor %s: %v", r.harness, r.err)
		}
	}
	for _, r := range single {
		if r.code != 0 {
			t.Errorf("doctor --harness %s: exit %d %s", r.harness, r.code, r.stderr)
		}
	}
	out, stderr, code := whole.out, whole.stderr, whole.code
	if code != 0 {
		t.Fatalf("doctor: exit %d\n%s\n%s", code, out, stderr)
	}
	for h := range bins {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == h {
				found = true
				if f[1] != "ok" {
					t.Errorf("%s: %q", h, line)
				}
			}
		}
		if !found {
			t.Errorf("doctor does not report %s:\n%s", h, out)
		}
	}
}

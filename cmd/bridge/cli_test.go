package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// args fills a command's positional arguments with placeholders.
func placeholders(c command) []string {
	out := strings.Fields(c.name)
	for range c.nargs {
		out = append(out, "x_placeholder")
	}
	return out
}

// jsonError decodes the JSON error a --json command prints on stdout.
func jsonError(t *testing.T, stdout string) (code, message string) {
	t.Helper()
	var v struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || v.Error.Code == "" || v.Error.Message == "" {
		t.Fatalf("want a JSON error on stdout, got %q (%v)", stdout, err)
	}
	return v.Error.Code, v.Error.Message
}

// TestCLIConsistency is the table over every subcommand: help on stdout
// (--help and `bridge help CMD` alike, naming the positional arguments),
// usage errors with exit status 2 printed once, extra and missing arguments
// rejected, and --json errors as JSON.
func TestCLIConsistency(t *testing.T) {
	dir := t.TempDir()
	env := []string{"BRIDGE_DATA_DIR=" + dir}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			words := strings.Fields(c.name)
			if c.name == "help" {
				words = []string{"help", "help"}
			}
			out, stderr, code := runCLI(t, env, append(words, "--help")...)
			if c.name == "help" {
				out, stderr, code = runCLI(t, env, "help", "--help")
			}
			usage := "Usage: bridge " + strings.TrimSpace(c.name+" "+c.args)
			if code != 0 || stderr != "" || !strings.HasPrefix(out, usage) {
				t.Fatalf("--help: exit %d, stdout %q, stderr %q; want exit 0 and %q on stdout", code, out, stderr, usage)
			}
			out2, stderr2, code2 := runCLI(t, env, append([]string{"help"}, strings.Fields(c.name)...)...)
			if code2 != 0 || stderr2 != "" || out2 != out {
				t.Fatalf("bridge help %s: exit %d, stderr %q, stdout differs from --help:\n%s\nvs\n%s", c.name, code2, stderr2, out2, out)
			}
			if c.name == "help" {
				if _, stderr, code := runCLI(t, env, "help", "no-such-command"); code != 2 || strings.Count(stderr, "no-such-command") != 1 {
					t.Fatalf("help of an unknown command: exit %d, stderr %q", code, stderr)
				}
				return
			}

			// An unknown flag: exit 2, one message on stderr, nothing on stdout.
			out, stderr, code = runCLI(t, env, append(placeholders(c), "--no-such-flag")...)
			if code != 2 || out != "" || strings.Count(stderr, "no-such-flag") != 1 || strings.Contains(stderr, "Usage of") {
				t.Fatalf("unknown flag: exit %d, stdout %q, stderr %q; want 2 and the error once", code, out, stderr)
			}
			// The same with --json: the error is JSON on stdout.
			out, stderr, code = runCLI(t, env, append(placeholders(c), "--no-such-flag", "--json")...)
			if code != 2 || stderr != "" {
				t.Fatalf("unknown flag with --json: exit %d, stderr %q", code, stderr)
			}
			if ec, _ := jsonError(t, out); ec != "usage" {
				t.Fatalf("unknown flag with --json: code %q, want usage", ec)
			}
			// An extra argument is rejected, not ignored.
			if c.variadic {
				return
			}
			out, stderr, code = runCLI(t, env, append(placeholders(c), "extra_arg")...)
			if code != 2 || out != "" || strings.Count(stderr, "extra_arg") != 1 {
				t.Fatalf("extra argument: exit %d, stdout %q, stderr %q; want 2 naming it once", code, out, stderr)
			}
			// A missing argument too.
			if c.nargs > 0 {
				_, stderr, code = runCLI(t, env, words...)
				if code != 2 || !strings.Contains(stderr, strings.TrimSuffix(strings.Fields(c.args)[0], "...")) {
					t.Fatalf("missing %s: exit %d, stderr %q", c.args, code, stderr)
				}
			}
		})
	}
	t.Run("a newcomer's first hour", func(t *testing.T) { eachStore(t, cliFirstHour) })
}

// cliFirstHour: what a new user met in their first hour. An unknown
// --harness is a usage error (exit 2) naming every harness; help names
// every harness and where discovery looks (OpenCode too); an empty record
// says so; a query that is not search syntax says how to search for the
// text; export --output says what it wrote, and its errors carry one
// prefix; history dates its entries and shows messages as text (--json
// keeps the raw record); search leaves out the archived sessions a
// migration's summary worker ran in; a fork onto a harness whose program
// is missing names the program and a harness that works.
func cliFirstHour(t *testing.T, st storeKind) {
	empty := t.TempDir()
	out, stderr, code := runCLI(t, nil, "--data-dir", empty, "sessions")
	if code != 0 || !strings.HasPrefix(out, "No sessions in "+empty) {
		t.Fatalf("sessions on an empty record: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	help, _, _ := runCLI(t, nil, "help")
	for _, h := range harnessNames() {
		if !strings.Contains(help, h) {
			t.Errorf("bridge help does not name harness %s", h)
		}
	}
	if imp, _, _ := runCLI(t, nil, "help", "import"); !strings.Contains(imp, "OpenCode") || !strings.Contains(imp, "opencode.db") {
		t.Errorf("bridge help import leaves OpenCode out of --discover:\n%s", imp)
	}

	dir, sid := dataDirWithOneTurnIn(t, st.dataDir(t, nil))
	for _, args := range [][]string{
		{"doctor", "--harness", "claude"}, {"search", "hello", "--harness", "claude"}, {"fork", sid, "--harness", "claude"},
		{"migrate", "preview", sid, "--harness", "claude"}, {"import", "--harness", "claude", "/nonexistent"},
		{"import", "--discover", "--harness", "claude"},
	} {
		out, stderr, code := runCLI(t, nil, append([]string{"--data-dir", dir}, args...)...)
		if code != 2 || out != "" || !strings.Contains(stderr, `--harness "claude"`) || !strings.Contains(stderr, "claude-code, codex, dsh, fake, opencode") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 naming the harnesses", args, code, out, stderr)
		}
	}
	out, stderr, code = runCLI(t, nil, "--data-dir", dir, "search", "foo(")
	if code != 1 || strings.Contains(stderr, `near ""`) || !strings.Contains(stderr, `double quotes: "foo("`) {
		t.Errorf("search 'foo(': exit %d, stderr %q", code, stderr)
	}
	out, _, code = runCLI(t, nil, "--data-dir", dir, "history", sid)
	if code != 0 || !regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}  assistant\.message +fake: hello\n`).MatchString(out) {
		t.Errorf("history is not dated and readable:\n%s", out)
	}
	if raw, _, _ := runCLI(t, nil, "--data-dir", dir, "history", sid, "--json"); !strings.Contains(raw, `"payload": {`) {
		t.Errorf("history --json is not the raw record:\n%s", raw)
	}

	file := filepath.Join(t.TempDir(), "s.md")
	out, stderr, code = runCLI(t, nil, "--data-dir", dir, "export", sid, "--output", file)
	if code != 0 || !strings.Contains(out, "Wrote session "+sid) || !strings.Contains(out, file) {
		t.Errorf("export --output: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	out, stderr, code = runCLI(t, nil, "--data-dir", dir, "export", sid, "--output", file)
	if code != 1 || out != "" || strings.Count(stderr, "export:") != 1 || !strings.Contains(stderr, "already exists") {
		t.Errorf("export --output onto an existing file: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	// A migration preview runs a summary worker whose prompt repeats the
	// session's text; search finds the session, not the archived worker.
	if _, stderr, code := runCLI(t, nil, "--data-dir", dir, "migrate", "preview", sid, "--model", "fake-large"); code != 0 {
		t.Fatalf("migrate preview: %s", stderr)
	}
	var res schema.SessionSearchResult
	out, _, _ = runCLI(t, nil, "--data-dir", dir, "search", "hello", "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Hits) == 0 {
		t.Fatalf("search hello: %v %s", err, out)
	}
	for _, h := range res.Hits {
		if h.SessionID != sid {
			t.Errorf("search hello: a hit in %s, not the session", h.SessionID)
		}
	}

	// Claude Code's program is not on PATH: a fork onto it says so.
	td := filepath.Join("..", "..", "testdata", "claude-code", "transcript-with-compact-boundary.recorded.jsonl")
	out, stderr, code = runCLI(t, nil, "--data-dir", dir, "import", "--harness", "claude-code", td, "--json")
	var imp schema.SessionImportResult
	if code != 0 || json.Unmarshal([]byte(out), &imp) != nil {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	noPath := []string{"PATH=" + t.TempDir()}
	_, stderr, code = runCLI(t, noPath, "--data-dir", dir, "fork", imp.SessionID)
	if code != 1 || !strings.Contains(stderr, `"claude" not found`) || !strings.Contains(stderr, "--harness fake") || strings.Contains(stderr, "lacks") {
		t.Errorf("fork onto a missing program: exit %d, stderr %q", code, stderr)
	}
}

// TestCLIFailures: a command that fails exits 1 with one line on stderr
// that names no internal package or wire name; with --json the same error is
// a JSON object on stdout with its code.
func TestCLIFailures(t *testing.T) {
	env := []string{"BRIDGE_DATA_DIR=" + t.TempDir()}
	for _, c := range []struct {
		args []string
		code string
	}{
		{[]string{"history", "s_none"}, "not_found"},
		{[]string{"checkpoint", "s_none"}, "not_found"},
		{[]string{"migrate", "preview", "s_none"}, "not_found"},
		{[]string{"migrate", "execute", "p_none"}, "not_found"},
		{[]string{"import", "--harness", "fake", "/nonexistent/x.jsonl"}, "not_found"},
	} {
		out, stderr, code := runCLI(t, env, c.args...)
		if code != 1 || out != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 and one line", c.args, code, out, stderr)
		}
		for _, internal := range []string{"core:", "migration/", "session/", "maxMessages", "sessionId"} {
			if strings.Contains(stderr, internal) {
				t.Errorf("%v: the message names %q: %s", c.args, internal, stderr)
			}
		}
		out, stderr, code = runCLI(t, env, append(c.args, "--json")...)
		if code != 1 || stderr != "" {
			t.Errorf("%v --json: exit %d, stderr %q", c.args, code, stderr)
			continue
		}
		if ec, msg := jsonError(t, out); ec != c.code || strings.Contains(msg, "core:") {
			t.Errorf("%v --json: code %q message %q, want code %q", c.args, ec, msg, c.code)
		}
	}
}

// TestCLITopLevel: bridge --help and bridge help print the same on stdout;
// --version is `bridge version`; an unknown command or flag exits 2 once.
func TestCLITopLevel(t *testing.T) {
	h1, e1, c1 := runCLI(t, nil, "--help")
	h2, e2, c2 := runCLI(t, nil, "help")
	if c1 != 0 || c2 != 0 || e1 != "" || e2 != "" || h1 != h2 || !strings.Contains(h1, "Commands:") {
		t.Fatalf("--help (%d %q) and help (%d %q) differ or fail", c1, e1, c2, e2)
	}
	for _, c := range commands {
		if !strings.Contains(h1, "  "+strings.TrimSpace(c.name+" "+c.args)) {
			t.Errorf("bridge help does not list %s", c.name)
		}
	}
	v1, _, c1 := runCLI(t, nil, "--version")
	v2, _, c2 := runCLI(t, nil, "version")
	if c1 != 0 || c2 != 0 || v1 != v2 || !strings.HasPrefix(v1, "bridge ") {
		t.Fatalf("--version %q (%d), version %q (%d)", v1, c1, v2, c2)
	}
	for _, args := range [][]string{{"no-such-command"}, {"--no-such-flag", "sessions"}, {"--version", "sessions"}} {
		out, stderr, code := runCLI(t, nil, args...)
		if code != 2 || out != "" || strings.Count(stderr, "\n") != 2 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, an error line and a hint", args, code, out, stderr)
		}
	}
}

// TestDevNullIsNotATerminal: `bridge < /dev/null` serves (stdin is not a
// terminal, though /dev/null is a character device): no usage text, and
// the end of input before shutdown is exit status 1.
func TestDevNullIsNotATerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	cmd := exec.Command(binPath)
	cmd.Env = append(os.Environ(), "BRIDGE_DATA_DIR="+t.TempDir())
	cmd.Stdin = null
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || strings.Contains(string(out), "Usage") {
		t.Fatalf("bridge < /dev/null: %v, output %q; want it to serve (exit 1 at the end of input, no usage)", err, out)
	}
}

// TestEveryCommandIsDescribed: each subcommand Main dispatches has an entry
// in commands (which drives help, argument checks and the table above).
func TestEveryCommandIsDescribed(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	body := string(src)
	body = body[strings.Index(body, "switch cmd {"):]
	body = body[:strings.Index(body, "default:")]
	n := 0
	for _, line := range strings.Split(body, "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "case \"")
		if !ok {
			continue
		}
		name = name[:strings.Index(name, "\"")]
		n++
		if _, ok := commandNamed(name); !ok && !isGroup(name) {
			t.Errorf("bridge %s is not in commands", name)
		}
	}
	if n < 10 {
		t.Fatalf("found only %d commands in main.go's switch", n)
	}
}

// isGroup reports whether name is a command group: every command of it is
// described as "NAME SUBCOMMAND" (migrate preview, store copy).
func isGroup(name string) bool {
	for _, c := range commands {
		if strings.HasPrefix(c.name, name+" ") {
			return true
		}
	}
	return false
}

// dataDirWithOneTurn makes a data directory holding one fake session
// with one finished turn, through a bridge serve that has exited cleanly.
func dataDirWithOneTurn(t *testing.T) (dir, sid string) {
	t.Helper()
	return dataDirWithOneTurnIn(t, t.TempDir())
}

// dataDirWithOneTurnIn is dataDirWithOneTurn in the data directory dir.
func dataDirWithOneTurnIn(t *testing.T, dir string) (string, string) {
	t.Helper()
	c := startBridge(t, dir)
	c.initialize(nil)
	sid := createFake(t, c)
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("hello")})
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit %d", code)
	}
	return dir, sid
}

// TestCLIFlagValues: a flag value the service refuses is a usage error
// (exit 2) that names the flag as typed, not the request field behind it.
func TestCLIFlagValues(t *testing.T) {
	dir, sid := dataDirWithOneTurn(t)
	env := []string{"BRIDGE_DATA_DIR=" + dir}
	for _, cc := range []struct {
		args []string
		flag string
	}{
		{[]string{"migrate", "preview", sid, "--model", "other", "--budget", "-5"}, "--budget"},
		{[]string{"migrate", "preview", sid, "--model", "other", "--lang", "xx"}, "--lang"},
		{[]string{"checkpoint", sid, "--reason", "bogus"}, "--reason"},
		{[]string{"history", sid, "--max", "-1"}, "--max"},
		{[]string{"history", sid, "--max", "0"}, "--max must be at least 1"},
		{[]string{"search", "x", "--since", "2027-01-01", "--until", "2026-12-31"}, "--until 2026-12-31 is not after --since 2027-01-01"},
		{[]string{"search", " ", ""}, "want a QUERY"},
		{[]string{"search", "x", "--cursor", "garbage"}, `--cursor "garbage" is not one a search returned`},
	} {
		out, stderr, code := runCLI(t, env, cc.args...)
		if code != 2 || out != "" || !strings.Contains(stderr, cc.flag) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 naming %s", cc.args, code, out, stderr, cc.flag)
		}
		for _, internal := range []string{"summaryCharBudget", "maxMessages", "migration/", "session/"} {
			if strings.Contains(stderr, internal) {
				t.Errorf("%v: the message names %q: %s", cc.args, internal, stderr)
			}
		}
	}
}

// TestGlobalFlagsBeforeOrAfter: --json and --data-dir are global flags that
// may come before the command or after it, with the same result; a flag
// before the command that is not global is a usage error saying where it
// belongs (as JSON with --json).
func TestGlobalFlagsBeforeOrAfter(t *testing.T) {
	dir, sid := dataDirWithOneTurn(t)
	isJSON := func(s string) bool {
		s = strings.TrimSpace(s)
		return json.Valid([]byte(s)) && (strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["))
	}
	for _, forms := range [][][]string{
		{{"--json", "--data-dir", dir, "sessions"}, {"sessions", "--json", "--data-dir", dir}, {"--data-dir", dir, "sessions", "--json"}, {"--json", "sessions", "--data-dir", dir}},
		{{"--json", "--data-dir", dir, "history", sid, "--max", "5"}, {"--data-dir", dir, "history", sid, "--max", "5", "--json"}, {"history", "--json", sid, "--data-dir", dir, "--max", "5"}},
		{{"--json", "version"}, {"version", "--json"}, {"--json", "--version"}},
		{{"--json", "--data-dir", dir, "export", sid, "--format", "json"}, {"export", sid, "--format", "json", "--data-dir", dir, "--json"}},
	} {
		var first string
		for i, args := range forms {
			out, stderr, code := runCLI(t, nil, args...)
			if code != 0 || stderr != "" || !isJSON(out) {
				t.Fatalf("bridge %s: exit %d, stderr %q, stdout %q; want JSON", strings.Join(args, " "), code, stderr, out)
			}
			if i == 0 {
				first = out
			} else if out != first {
				t.Errorf("bridge %s printed\n%s\nbut bridge %s printed\n%s", strings.Join(args, " "), out, strings.Join(forms[0], " "), first)
			}
		}
	}
	if !strings.Contains(stdoutOf(t, dir, "sessions"), sid) {
		t.Fatalf("the session is not listed")
	}

	// A failure with --json first is JSON on stdout, exit 1.
	out, stderr, code := runCLI(t, nil, "--json", "--data-dir", dir, "history", "s_none")
	if code != 1 || stderr != "" {
		t.Fatalf("--json history s_none: exit %d, stderr %q", code, stderr)
	}
	if ec, _ := jsonError(t, out); ec != "not_found" {
		t.Fatalf("--json history s_none: code %q", ec)
	}
	// Unknown flags, before and after the command.
	for _, cc := range []struct {
		args []string
		says []string
	}{
		{[]string{"--no-such-flag", "sessions"}, []string{"--no-such-flag", "before the command", "--json", "--data-dir"}},
		{[]string{"--harness", "fake", "sessions"}, []string{"--harness", "after its name"}},
		{[]string{"sessions", "--no-such-flag"}, []string{"--no-such-flag", "bridge help sessions"}},
		{[]string{"--json", "sessions", "--no-such-flag"}, []string{"--no-such-flag"}},
	} {
		out, stderr, code := runCLI(t, []string{"BRIDGE_DATA_DIR=" + dir}, cc.args...)
		text := stderr
		if cc.args[0] == "--json" {
			if stderr != "" {
				t.Errorf("%v: stderr %q, want the error as JSON on stdout", cc.args, stderr)
			}
			ec, msg := jsonError(t, out)
			if ec != "usage" {
				t.Errorf("%v: code %q, want usage", cc.args, ec)
			}
			text = msg
		} else if out != "" {
			t.Errorf("%v: stdout %q", cc.args, out)
		}
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", cc.args, code)
		}
		for _, w := range cc.says {
			if !strings.Contains(text, w) {
				t.Errorf("%v: the error %q does not say %q", cc.args, text, w)
			}
		}
	}
	// bridge help documents it.
	help, _, _ := runCLI(t, nil, "help")
	if !strings.Contains(help, "before or after the command") || !strings.Contains(help, "--json") {
		t.Errorf("bridge help does not say where global flags go:\n%s", help)
	}
}

// stdoutOf runs `bridge --data-dir dir cmd` and returns its stdout.
func stdoutOf(t *testing.T, dir, cmd string) string {
	t.Helper()
	out, stderr, code := runCLI(t, nil, "--data-dir", dir, cmd)
	if code != 0 {
		t.Fatalf("bridge %s: exit %d: %s", cmd, code, stderr)
	}
	return out
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/schema"
)

// acpxEnv runs the real acpx (npm, pinned) with Node 22 against
// `bridge acp`, in a private HOME (acpx keeps its session records there)
// and a project folder of its own.
type acpxEnv struct {
	node, cli string
	home, cwd string
	dataDir   string
	agent     string // the --agent command line
	pids      string // file the agent command appends its pid to
}

func newAcpxEnv(t *testing.T, dataDir, harness, cwd string) *acpxEnv {
	t.Helper()
	node, _, err := dshtest.Programs()
	if err != nil {
		t.Fatalf("acpx needs Node 22: %v", err)
	}
	cli := filepath.Join(adaptertest.RepoRoot(t), "node_modules", "acpx", "dist", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("acpx is not installed (%v): run `bash .ci/test` (npm ci installs the pinned acpx)", err)
	}
	root := t.TempDir()
	if cwd == "" {
		cwd = filepath.Join(root, "project")
	}
	e := &acpxEnv{node: node, cli: cli, home: filepath.Join(root, "home"), cwd: cwd,
		dataDir: dataDir, pids: filepath.Join(root, "pids")}
	for _, d := range []string{e.home, e.cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The agent command records its pid, then becomes bridge acp.
	e.agent = "sh -c 'echo $$ >> " + e.pids + "; exec " + binPath + " --data-dir " + dataDir + " acp --harness " + harness + "'"
	return e
}

// run runs acpx with args and returns its output and exit code. acpx's
// --timeout bounds each of its requests to the agent: session/new through
// `bridge acp` to a real Claude Code took over 120 s at load 40, so it is
// a limit a loaded machine meets, and the kill only ends an acpx that
// never exits.
func (e *acpxEnv) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(e.node, append([]string{e.cli, "--agent", e.agent, "--timeout", "600"}, args...)...)
	cmd.Dir = e.cwd
	cmd.Env = append(os.Environ(), "HOME="+e.home, "XDG_CONFIG_HOME="+filepath.Join(e.home, ".config"), "NO_COLOR=1")
	timer := time.AfterFunc(15*time.Minute, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	out, err := cmd.CombinedOutput()
	timer.Stop()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("acpx %v: %v\n%s", args, err, out)
	return "", -1
}

// agentPids are the pids of the bridge acp processes acpx started.
func (e *acpxEnv) agentPids(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile(e.pids)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file: %q", f)
		}
		out = append(out, n)
	}
	return out
}

// waitAgentsGone waits until every bridge acp process acpx started has
// exited (acpx keeps a persistent session's agent alive for --ttl), and
// until acpx's queue owners have released their sessions (their lock files
// under ~/.acpx/queues are gone): the owner stops the agent first, and the
// next acpx's new owner must take the lease over. Once, at load 20, that
// next acpx gave up on its owner ("Session queue owner failed to start").
func (e *acpxEnv) waitAgentsGone(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for _, pid := range e.agentPids(t) {
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				t.Fatalf("bridge acp (pid %d) still runs two minutes after acpx's queue owner should have stopped it", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for {
		locks, err := filepath.Glob(filepath.Join(e.home, ".acpx", "queues", "*.lock"))
		if err != nil {
			t.Fatal(err)
		}
		if len(locks) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("acpx's queue owner still holds %v two minutes after its agent was stopped", locks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustContain(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("%s: output lacks %q:\n%s", what, w, out)
		}
	}
}

// recordedKinds returns the kinds of a session's entries, in order, read
// through the binary's own history command.
func recordedKinds(t *testing.T, dataDir, sid string) ([]string, []schema.Entry) {
	t.Helper()
	out, err := exec.Command(binPath, "--data-dir", dataDir, "history", sid, "--json").Output()
	if err != nil {
		t.Fatalf("bridge history %s: %v", sid, err)
	}
	var h struct {
		Entries []schema.Entry `json:"entries"`
	}
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatalf("history: %v\n%s", err, out)
	}
	var kinds []string
	for _, e := range h.Entries {
		kinds = append(kinds, e.Kind)
	}
	return kinds, h.Entries
}

// sessionIDs returns the ids of the sessions recorded in dataDir.
func sessionIDs(t *testing.T, dataDir string) []string {
	t.Helper()
	out, err := exec.Command(binPath, "--data-dir", dataDir, "sessions", "--json").Output()
	if err != nil {
		t.Fatalf("bridge sessions: %v", err)
	}
	var l struct {
		Items []struct {
			SessionID string `json:"sessionId"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatalf("sessions: %v\n%s", err, out)
	}
	var ids []string
	for _, it := range l.Items {
		ids = append(ids, it.SessionID)
	}
	return ids
}

// TestAcpxDrivesBridgeOverFakeHarness: acpx, a real ACP client nobody here
// wrote, drives `bridge acp --harness fake`: a one-shot exec whose tool is
// approved (it runs, and the record keeps the approval), one whose tool is
// denied (it does not run; acpx exits 5), a persistent session prompted by
// two acpx invocations with the agent process restarted between them, the
// agent's session list, and /compact.
func TestAcpxDrivesBridgeOverFakeHarness(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	e := newAcpxEnv(t, dataDir, "fake", "")

	// 1. exec, approved: text, the tool (permission asked and granted), a plan.
	out, code := e.run(t, "--approve-all", "exec", "say hello from the fake\nask Bash touch made.txt\nplan in_progress:write it; pending:test it")
	if code != 0 {
		t.Fatalf("acpx exec --approve-all: exit %d\n%s", code, out)
	}
	mustContain(t, "exec --approve-all", out, "hello from the fake", "session/request_permission",
		"[tool] Bash: touch made.txt (completed)", "fake Bash done: touch made.txt", "[plan]", "[in_progress] write it",
		"[pending] test it", "[done] end_turn")
	ids := sessionIDs(t, dataDir)
	if len(ids) != 1 {
		t.Fatalf("sessions after one exec: %v, want one", ids)
	}
	kinds, entries := recordedKinds(t, dataDir, ids[0])
	want := []string{"user.message", "assistant.message", "approval.requested", "approval.resolved", "tool.started", "tool.completed", "plan.updated"}
	if !containsInOrder(kinds, want) {
		t.Fatalf("record of the approved exec: %v, want %v in order", kinds, want)
	}
	for _, en := range entries {
		if en.Kind == "approval.resolved" && !strings.Contains(string(en.Payload), `"allow_once"`) {
			t.Fatalf("approval.resolved = %s, want the client's allow_once", en.Payload)
		}
	}
	e.waitAgentsGone(t)
	if n := len(e.agentPids(t)); n != 1 {
		t.Fatalf("acpx started bridge acp %d times for one exec", n)
	}

	// 2. exec, denied: the tool does not run, and acpx exits 5.
	out, code = e.run(t, "--deny-all", "exec", "ask Bash rm -rf everything")
	if code != 5 {
		t.Fatalf("acpx exec --deny-all: exit %d, want 5 (a denial)\n%s", code, out)
	}
	mustContain(t, "exec --deny-all", out, "(failed)", "refused (reject_once, by user)", "[done] end_turn")
	if strings.Contains(out, "fake Bash done") {
		t.Fatalf("the denied tool ran:\n%s", out)
	}

	// 3. A persistent session across two acpx invocations, the agent
	// restarted in between: the second comes back natively, same session.
	out, code = e.run(t, "sessions", "new")
	if code != 0 {
		t.Fatalf("acpx sessions new: exit %d\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	sid := strings.TrimSpace(lines[len(lines)-1])
	if !strings.HasPrefix(sid, "s_") {
		t.Fatalf("acpx sessions new printed %q: want the Bridge session id (s_…)", out)
	}
	out, code = e.run(t, "--ttl", "1", "--approve-all", "say the first turn")
	if code != 0 {
		t.Fatalf("first prompt: exit %d\n%s", code, out)
	}
	mustContain(t, "first prompt", out, "the first turn", "[done] end_turn")
	e.waitAgentsGone(t)
	before := len(e.agentPids(t))
	out, code = e.run(t, "--ttl", "1", "--approve-all", "say the second turn")
	if code != 0 {
		t.Fatalf("second prompt: exit %d\n%s", code, out)
	}
	mustContain(t, "second prompt", out, "[Bridge] Session restored: native", "the second turn", "[done] end_turn")
	if after := len(e.agentPids(t)); after != before+1 {
		t.Fatalf("the second invocation started %d agents, want a new one", after-before)
	}
	kinds, entries = recordedKinds(t, dataDir, sid)
	var said []string
	for _, en := range entries {
		if en.Kind == "assistant.message" {
			var p struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(en.Payload, &p)
			said = append(said, p.Text)
		}
	}
	if !containsInOrder(said, []string{"the first turn", "the second turn"}) {
		t.Fatalf("session %s said %q: want both turns in one session (kinds %v)", sid, said, kinds)
	}

	// 4. The agent's own session list (session/list) names the sessions.
	out, code = e.run(t, "sessions", "list")
	if code != 0 {
		t.Fatalf("acpx sessions list: exit %d\n%s", code, out)
	}
	mustContain(t, "sessions list", out, sid)

	// 5. /compact: the fake compacts itself, and the record has the one
	// normalised context.compacted fact.
	e.waitAgentsGone(t)
	out, code = e.run(t, "--ttl", "1", "/compact the parser")
	if code != 0 {
		t.Fatalf("/compact: exit %d\n%s", code, out)
	}
	mustContain(t, "/compact", out, "[Bridge] The harness compacted its context.", "[done] end_turn")
	kinds, _ = recordedKinds(t, dataDir, sid)
	if !containsInOrder(kinds, []string{"context.compacted"}) {
		t.Fatalf("after /compact the record is %v: want a context.compacted entry", kinds)
	}
}

// containsInOrder reports whether want appears in got as a subsequence.
func containsInOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && strings.Contains(g, want[i]) {
			i++
		}
	}
	return i == len(want)
}

// TestAcpxDrivesBridgeOverClaudeCode: the same client through `bridge acp
// --harness claude-code` to the real Claude Code against the fake model
// server: a Write the user approves runs, one denied does not (acpx exits
// 5), a persistent session continues in a new agent process through
// Claude Code's own resume, and /compact is Claude Code's compaction.
func TestAcpxDrivesBridgeOverClaudeCode(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{})
	write := func(name string) *fakemodel.ToolCall {
		in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(h.cwd, name), "content": "written\n"})
		return &fakemodel.ToolCall{ID: "toolu_" + strings.TrimSuffix(name, ".txt"), Name: "Write", Input: in}
	}
	toolOnce(h, "create first.txt", write("first.txt"))
	toolOnce(h, "create second.txt", write("second.txt"))
	h.onText("remember the word", "I will remember: heron.")
	h.onText("which word", "The word was heron.")
	e := newAcpxEnv(t, h.dataDir, "claude-code", h.cwd)

	out, code := e.run(t, "--approve-all", "exec", "create first.txt")
	if code != 0 {
		t.Fatalf("exec --approve-all: exit %d\n%s", code, out)
	}
	mustContain(t, "exec --approve-all", out, "session/request_permission", "(completed)", "File created successfully", "[done] end_turn")
	if _, err := os.Stat(filepath.Join(h.cwd, "first.txt")); err != nil {
		t.Fatalf("the approved Write did not run: %v", err)
	}

	out, code = e.run(t, "--deny-all", "exec", "create second.txt")
	if code != 5 {
		t.Fatalf("exec --deny-all: exit %d, want 5\n%s", code, out)
	}
	mustContain(t, "exec --deny-all", out, "(failed)", "[done] end_turn")
	if _, err := os.Stat(filepath.Join(h.cwd, "second.txt")); !os.IsNotExist(err) {
		t.Fatalf("the denied Write ran: %v", err)
	}

	out, code = e.run(t, "sessions", "new")
	if code != 0 {
		t.Fatalf("sessions new: exit %d\n%s", code, out)
	}
	out, code = e.run(t, "--ttl", "1", "remember the word heron")
	if code != 0 {
		t.Fatalf("first prompt: exit %d\n%s", code, out)
	}
	mustContain(t, "first prompt", out, "I will remember: heron.")
	e.waitAgentsGone(t)
	out, code = e.run(t, "--ttl", "1", "which word did I ask you to remember?")
	if code != 0 {
		t.Fatalf("second prompt: exit %d\n%s", code, out)
	}
	mustContain(t, "second prompt", out, "[Bridge] Session restored: native", "The word was heron.")
	// Claude Code itself was given the earlier turn: its own resume.
	last := h.fake.Requests()[len(h.fake.Requests())-1]
	if !strings.Contains(string(last.Body), "remember the word heron") {
		t.Fatalf("the resumed Claude Code did not send the first turn to the model")
	}

	e.waitAgentsGone(t)
	out, code = e.run(t, "--ttl", "1", "/compact")
	if code != 0 {
		t.Fatalf("/compact: exit %d\n%s", code, out)
	}
	mustContain(t, "/compact", out, "[Bridge] The harness compacted its context.")
}

// TestACPSDKClientCoversEveryMethod runs the official ACP SDK's client
// (clients/interop/acp-sdk.mjs) against `bridge acp --harness fake`: every
// method and update, each message checked against the SDK's ACP v1
// schemas. Then the record: closing stdin ended the second process after
// the before_shutdown checkpoint serve writes.
func TestACPSDKClientCoversEveryMethod(t *testing.T) {
	t.Parallel()
	node, _, err := dshtest.Programs()
	if err != nil {
		t.Fatalf("the ACP SDK test needs Node 22: %v", err)
	}
	script := filepath.Join(adaptertest.RepoRoot(t), "clients", "interop", "acp-sdk.mjs")
	dataDir, cwd := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, script, binPath, dataDir, cwd).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "acp-sdk: ok") {
		t.Fatalf("acp-sdk.mjs: %v\n%s", err, out)
	}
	ids := strings.Fields(strings.SplitN(string(out), "acp-sdk: ok ", 2)[1])
	sid, target := ids[0], ids[1]
	// The edited handoff the client sent back with /migrate-go started the
	// target session.
	_, tentries := recordedKinds(t, dataDir, target)
	var handoff bool
	for _, e := range tentries {
		handoff = handoff || e.Kind == "migration.handoff" && strings.Contains(string(e.Payload), "Also: keep the fake harness.")
	}
	if !handoff {
		t.Fatalf("the migration target %s has no migration.handoff with the user's edit", target)
	}
	_, entries := recordedKinds(t, dataDir, sid)
	var reasons []string
	for _, e := range entries {
		if e.Kind == "checkpoint" {
			var p struct {
				Reason string `json:"reason"`
			}
			_ = json.Unmarshal(e.Payload, &p)
			reasons = append(reasons, p.Reason)
		}
	}
	if !containsInOrder(reasons, []string{"manual", "before_shutdown"}) {
		t.Fatalf("checkpoints of %s: %v, want the /checkpoint one and a before_shutdown one when stdin closed", sid, reasons)
	}
}

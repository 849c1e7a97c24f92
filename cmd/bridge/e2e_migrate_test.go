package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// These tests migrate a task between the real Claude Code and Codex
// programs through the bridge binary (ARCHITECTURE.md, Migration): a summary worker on the
// source harness writes the five-part handoff, the user edits the preview
// file, and the target's first model request carries the edited handoff.

// handoffHeadings are the five English section headings, in order.
var handoffHeadings = []string{"Goal", "Current state", "Key decisions & conventions", "Key files", "Next step"}

// workerHandoff is what the fake model writes as the summary worker.
const workerHandoff = `## Goal
Make the service listen on port 55837 and keep the request timeout at 30 seconds.

## Current state
The user chose port 55837. The listener in internal/server/listen.go still uses the old port; nothing has been changed yet.

## Key decisions & conventions
- Port 55837, because the user asked for it.
- Request timeout 30 seconds, because the user said to keep it.

## Key files
internal/server/listen.go

## Next step
Change the port in internal/server/listen.go to 55837 and run the tests.
`

// api is the fake server's name for the provider API each harness calls.
var api = map[string]string{"claude-code": "anthropic", "codex": "responses", "dsh": "chat"}

func listSessions(t *testing.T, c *client, archived bool) []schema.SessionListItem {
	t.Helper()
	l := rpctest.Must(c.Client, c.SessionList, schema.SessionListParams{IncludeArchived: archived})
	return l.Items
}

func TestE2EMigrateClaudeToCodex(t *testing.T) {
	t.Parallel()
	migrate(t, "claude-code", "codex")
}

func TestE2EMigrateCodexToClaude(t *testing.T) {
	t.Parallel()
	migrate(t, "codex", "claude-code")
}

// TestE2EMigrateDSHToClaude migrates from the real DeepSeek Harness (the
// summary worker is a DSH session) to Claude Code.
func TestE2EMigrateDSHToClaude(t *testing.T) {
	t.Parallel()
	migrate(t, "dsh", "claude-code")
}

// TestE2EMigrateClaudeToDSH migrates from Claude Code to the real DeepSeek
// Harness (the handoff travels as a paused DSH goal and the kickoff).
func TestE2EMigrateClaudeToDSH(t *testing.T) {
	t.Parallel()
	migrate(t, "claude-code", "dsh")
}

// migrate runs preview, edit and execute from a from-session to harness to.
func migrate(t *testing.T, from, to string) {
	h := newHarnessEnv(t, harnessOptions{DSH: from == "dsh" || to == "dsh"})
	h.onText("You write handoffs", workerHandoff)
	h.onText("port 55837", "Understood: port 55837, in internal/server/listen.go.")
	h.onText("timeout", "OK, the timeout stays at 30 seconds.")
	c := h.start(t)
	src := h.create(t, c, from, "port change")
	say(t, c, src, "The service must listen on port 55837. The listener lives in internal/server/listen.go.")
	say(t, c, src, "Also keep the request timeout at 30 seconds.")

	db := h.openDB(t)
	n0, sum0 := recordDigest(t, db, src)
	if n0 < 4 {
		t.Fatalf("source record has %d entries after two turns", n0)
	}

	// Preview: the summary worker runs on the source's harness.
	before := len(h.fake.Requests())
	p := rpctest.Must(c.Client, c.MigrationPreview, schema.MigrationPreviewParams{SessionID: src, Target: schema.MigrationTarget{Harness: to}})
	var worker []fakemodel.Request
	for _, r := range h.requestsSince(before) {
		if strings.Contains(r.LastUserText, "You write handoffs") {
			worker = append(worker, r)
		}
	}
	if len(worker) != 1 || worker[0].API != api[from] {
		t.Fatalf("summary worker requests: %d (api %v); want one %s request from the %s worker", len(worker), apis(worker), api[from], from)
	}
	if wt := requestText(worker[0]); !strings.Contains(wt, "55837") || !strings.Contains(wt, "internal/server/listen.go") {
		t.Errorf("the worker was not shown the source's material:\n%.3000s", wt)
	}
	if p.PreviewID == "" || !strings.Contains(p.Summary, "55837") || len(p.Sections) != 5 {
		t.Fatalf("migration/preview = %+v", p)
	}
	for i, s := range p.Sections {
		if s.Title != handoffHeadings[i] || s.Body == "" {
			t.Errorf("section %d = %q (%d chars), want %q", i, s.Title, len(s.Body), handoffHeadings[i])
		}
	}
	if p.Warnings == nil {
		t.Errorf("preview warnings missing (want a list, even empty)")
	}
	for _, w := range p.Warnings {
		if strings.Contains(w, "key files not found") {
			t.Errorf("preview warns about a key file the source does mention: %q", w)
		}
	}
	rel, err := filepath.Rel(h.dataDir, p.Path)
	if err != nil || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
		t.Errorf("preview file %s is not under the data directory %s", p.Path, h.dataDir)
	}
	st, err := os.Stat(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("preview file mode %v, want 0600", st.Mode().Perm())
	}
	b, err := os.ReadFile(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != p.Summary {
		t.Errorf("preview file differs from the previewed summary")
	}

	// The worker is archived; only the source is listed by default.
	var workers []schema.SessionListItem
	for _, it := range listSessions(t, c, true) {
		if it.SessionID != src {
			workers = append(workers, it)
		}
	}
	if len(workers) != 1 || !workers[0].Archived || workers[0].Harness != from {
		t.Errorf("sessions besides the source after preview: %+v; want one archived %s worker", workers, from)
	}
	if l := listSessions(t, c, false); len(l) != 1 || l[0].SessionID != src || l[0].Archived {
		t.Errorf("listed sessions after preview: %+v; want the source alone", l)
	}
	if n, sum := recordDigest(t, db, src); n != n0 || sum != sum0 {
		t.Fatalf("the preview changed the source's record: %d entries (sha256 %s), was %d (%s)", n, sum, n0, sum0)
	}

	// The user corrects the number, then executes.
	edited := strings.ReplaceAll(string(b), "55837", "55838")
	if err := os.WriteFile(p.Path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	before = len(h.fake.Requests())
	x := rpctest.Must(c.Client, c.MigrationExecute, schema.MigrationExecuteParams{PreviewID: p.PreviewID})
	if x.TargetSessionID == "" || x.TargetSessionID == src || !x.KickoffSent {
		t.Fatalf("migration/execute = %+v, want a new target and the kickoff sent", x)
	}
	if x.GoalCreated && !x.GoalPaused {
		t.Errorf("migration/execute = %+v: a goal was created and not paused, yet the kickoff went out", x)
	}
	if x.Warnings == nil {
		t.Errorf("execute warnings missing (want a list, even empty)")
	}
	t.Logf("execute: %+v", x)
	if !x.ModelTransferred && !containsAny(x.Warnings, "is not carried across harnesses") {
		t.Errorf("execute warnings %q do not say the source model was not carried to %s", x.Warnings, to)
	}
	rs := h.requestsSince(before)
	if len(rs) == 0 {
		t.Fatal("the target never called the model")
	}
	first := rs[0]
	if first.API != api[to] {
		t.Fatalf("first model request after execute is %s (%s), want the %s target's %s", first.API, first.Path, to, api[to])
	}
	ft := requestText(first)
	for _, hd := range handoffHeadings {
		if !strings.Contains(ft, "## "+hd) {
			t.Errorf("the target's first request lacks the heading %q", hd)
		}
	}
	if !strings.Contains(ft, "55838") || strings.Contains(ft, "55837") {
		t.Errorf("the target's first request must carry the edited 55838 and not 55837:\n%.3000s", ft)
	}

	// The target is recorded with the handoff; the source is untouched.
	var target *schema.SessionListItem
	for _, it := range listSessions(t, c, false) {
		if it.SessionID == x.TargetSessionID {
			it := it
			target = &it
		}
	}
	if target == nil || target.Harness != to || target.Title != "port change → "+to {
		t.Errorf("target in session/list: %+v", target)
	}
	var handoff *schema.Entry
	for _, e := range history(t, c, x.TargetSessionID) {
		if e.Kind == "migration.handoff" {
			e := e
			handoff = &e
		}
	}
	if handoff == nil {
		t.Fatal("the target's record has no migration.handoff entry")
	}
	if hp := payloadOf(t, *handoff); hp["sourceSessionId"] != src || hp["summary"] != edited {
		t.Errorf("migration.handoff payload %s, want the source id and the edited file verbatim", handoff.Payload)
	}
	if n, sum := recordDigest(t, db, src); n != n0 || sum != sum0 {
		t.Fatalf("the migration changed the source's record: %d entries (sha256 %s), was %d (%s)", n, sum, n0, sum0)
	}
	rows := audit(t, db, src, "migration.executed")
	if len(rows) != 1 || !strings.Contains(string(rows[0].Body), x.TargetSessionID) {
		t.Errorf("migration.executed audit rows: %+v", rows)
	}
	sess, err := db.GetSession(context.Background(), src)
	if err != nil || sess.Archived {
		t.Errorf("source after migration: %+v, %v", sess, err)
	}
	if code := c.exit(true); code != 0 {
		t.Errorf("bridge exit code %d", code)
	}
}

func containsAny(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func apis(rs []fakemodel.Request) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.API)
	}
	return out
}

// TestMigratePreviewOnAFreshInstall: a fresh data directory, a fake session
// with one plain prompt (no script), and `bridge migrate preview` to
// another model of the fake harness succeeds: the fake's summary worker
// writes a five-part handoff from the conversation. The preview executes.
func TestMigratePreviewOnAFreshInstall(t *testing.T) {
	t.Parallel()
	dir, sid := dataDirWithOneTurn(t)
	env := []string{"BRIDGE_DATA_DIR=" + dir}
	out, stderr, code := runCLI(t, env, "migrate", "preview", sid, "--model", "fake-large", "--json")
	if code != 0 {
		t.Fatalf("migrate preview: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	var p schema.MigrationPreviewResult
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(p.Sections) != 5 {
		t.Fatalf("sections %+v", p.Sections)
	}
	for i, s := range p.Sections {
		if s.Title != handoffHeadings[i] || strings.TrimSpace(s.Body) == "" {
			t.Errorf("section %d: %q %q", i, s.Title, s.Body)
		}
	}
	if !strings.Contains(p.Sections[0].Body, "hello") {
		t.Errorf("the goal does not come from the conversation: %q", p.Sections[0].Body)
	}
	out, stderr, code = runCLI(t, env, "migrate", "execute", p.PreviewID)
	if code != 0 || !strings.Contains(out, "target session ") {
		t.Fatalf("migrate execute: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// TestE2EMigrateConfirmVersusContinue: with the real Claude Code as the
// target, the default flow (restate and wait, then the user's go-ahead)
// costs exactly one more target model request than --continue (restate and
// begin in the same request), counted at the fake model server.
func TestE2EMigrateConfirmVersusContinue(t *testing.T) {
	t.Parallel()
	h := newHarnessEnv(t, harnessOptions{Config: map[string]any{
		"presets": []map[string]any{{"name": "reviewer", "harness": "claude-code", "description": "reviews"}}}})
	h.onText("You write handoffs", workerHandoff)
	h.onText("then stop and wait", "Understood: port 55837 in internal/server/listen.go. I will wait.")
	h.onText("then continue with the next step", "Understood: port 55837. Changing internal/server/listen.go now.")
	h.onText("Go ahead", "Changing internal/server/listen.go now.")
	c := h.start(t)
	src := h.create(t, c, "claude-code", "port change")
	say(t, c, src, "The service must listen on port 55837. The listener lives in internal/server/listen.go.")

	targetRequests := func(cont bool) int {
		p := rpctest.Must(c.Client, c.MigrationPreview, schema.MigrationPreviewParams{SessionID: src, Target: schema.MigrationTarget{Preset: "reviewer"}})
		before := len(h.fake.Requests())
		x := rpctest.Must(c.Client, c.MigrationExecute, schema.MigrationExecuteParams{PreviewID: p.PreviewID, Continue: cont})
		if !x.KickoffSent {
			t.Fatalf("migration/execute (continue %v) = %+v", cont, x)
		}
		if !cont {
			say(t, c, x.TargetSessionID, "Go ahead.")
		}
		rs := h.requestsSince(before)
		for _, r := range rs {
			if r.API != "anthropic" {
				t.Errorf("a %s request during the target's turns", r.API)
			}
		}
		ask := "then stop and wait"
		if cont {
			ask = "then continue with the next step"
		}
		if len(rs) == 0 || !strings.Contains(requestText(rs[0]), ask) {
			t.Errorf("continue %v: the kickoff request does not ask to %q", cont, ask)
		}
		return len(rs)
	}
	confirm, cont := targetRequests(false), targetRequests(true)
	if confirm != cont+1 {
		t.Fatalf("target model requests: confirm %d, continue %d; want exactly one more for confirm", confirm, cont)
	}
	t.Logf("target model requests: confirm %d, continue %d", confirm, cont)
}

package service_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/handoff"
	"github.com/bridge-dev/bridge/schema"
)

// named gives a fake host another harness name, so a test can have a
// second, differently capable host.
type named struct {
	*fake.Host
	name string
}

func (n named) Harness() string { return n.name }
func (n named) Probe(ctx context.Context) core.Probe {
	p := n.Host.Probe(ctx)
	p.Harness = n.name
	return p
}

const handoffText = `## Goal
Ship the parser; done when the tests pass.

## Current state
The parser works; the budget is
4096
tokens.

## Key decisions & conventions
- Count braces, respect strings.

## Key files
- src/parse.go

## Next step
Benchmark it.
`

// workerScript answers the summary worker's instruction with handoffText
// and records every prompt a session received.
func workerScript(prompts *[]string) func(string) []fake.Step {
	return func(p string) []fake.Step {
		*prompts = append(*prompts, p)
		if strings.Contains(p, "You write handoffs") {
			return []fake.Step{{Op: fake.OpJSON, Text: handoffText}}
		}
		return nil
	}
}

// recordHash hashes a session's entries, to prove they did not change.
func recordHash(t *testing.T, r *rig, id string) (int, string) {
	t.Helper()
	b := r.branch(id)
	all, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return len(b), fmt.Sprintf("%x", sha256.Sum256(all))
}

func migrationRig(t *testing.T, open opener, o fake.Options, prompts *[]string) (*rig, core.Session) {
	o.Script = workerScript(prompts)
	r := newRig(t, rigOptions{open: open, fake: o, presets: []core.Preset{{Name: "reviewer", Harness: "fake", Description: "read-only"}}})
	s := r.create()
	r.prompt(s.ID, "say I will edit src/parse.go")
	r.prompt(s.ID, "say budget is 4096 tokens")
	return r, s
}

func TestMigrationPreviewAndExecute(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		var prompts []string
		r, src := migrationRig(t, open, fake.Options{}, &prompts)
		n0, h0 := recordHash(t, r, src.ID)
		sessionsBefore, _, _ := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})

		p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Preset: "reviewer"}})
		if err != nil {
			t.Fatalf("preview: %v", err)
		}
		if len(p.Sections) != 5 || p.Sections[0].Title != "Goal" || !strings.Contains(p.Summary, "4096") {
			t.Fatalf("preview %+v", p)
		}
		st, err := os.Stat(p.Path)
		if err != nil || st.Mode().Perm() != 0o600 || !strings.HasPrefix(p.Path, r.dir) {
			t.Fatalf("preview file %s: %v %v (want 0600 under the data dir)", p.Path, st, err)
		}
		// The worker existed, saw only the folded source, and is archived.
		all, _, _ := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
		if len(all) != len(sessionsBefore)+1 {
			t.Fatalf("sessions after preview: %d, want one worker more than %d", len(all), len(sessionsBefore))
		}
		for _, s := range all {
			if s.ID != src.ID && !s.Archived {
				t.Fatalf("worker %s not archived", s.ID)
			}
		}
		if n, h := recordHash(t, r, src.ID); n != n0 || h != h0 {
			t.Fatal("preview changed the source's record")
		}
		// The user corrects a number in the file.
		edited := strings.Replace(handoffText, "4096", "8192", 1)
		if err := os.WriteFile(p.Path, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		prompts = nil
		out, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID})
		if err != nil {
			t.Fatalf("execute: %v", err)
		}
		if !out.KickoffSent || !out.GoalCreated || !out.GoalPaused || !out.ModelTransferred || out.TargetSessionID == "" {
			t.Fatalf("outcome %+v", out)
		}
		if len(prompts) != 1 || !strings.Contains(prompts[0], "8192") || strings.Contains(prompts[0], "4096") || !strings.Contains(prompts[0], "stop and wait") {
			t.Fatalf("the target's kickoff must carry the edited file verbatim and ask to wait: %q", prompts)
		}
		tgt, _ := r.db.GetSession(ctx, out.TargetSessionID)
		if tgt.Preset != "reviewer" || tgt.Model != src.Model || tgt.Effort != src.Effort || !strings.Contains(tgt.Title, "→ reviewer") {
			t.Fatalf("target %+v", tgt)
		}
		// goalRounds was not given: the goal reaches the host with one round
		// (a second bound on an upstream goal loop), paused, carrying the edit.
		goals, err := r.hosts[0].(*fake.Host).Goals(tgt.NativeSessionID)
		if err != nil || len(goals) != 1 || goals[0].Rounds != 1 || goals[0].Status != "paused" || !strings.Contains(goals[0].Text, "8192") {
			t.Fatalf("the target's goals %+v (%v): want one paused goal of 1 round carrying the edited handoff", goals, err)
		}
		if n, h := recordHash(t, r, src.ID); n != n0 || h != h0 {
			t.Fatal("execute changed the source's record")
		}
		audit, _ := r.db.Audit(ctx, src.ID, "migration.executed")
		if len(audit) != 1 {
			t.Fatalf("migration audit rows: %d", len(audit))
		}
		if _, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID}); core.ErrorCode(err) != core.CodeConflict {
			t.Fatalf("executing a preview twice: %v, want conflict", err)
		}
	})
}

func TestMigrationGoalPauseFails(t *testing.T) {
	ctx := context.Background()
	var prompts []string
	r, src := migrationRig(t, nil, fake.Options{GoalPauseFails: true}, &prompts)
	p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Preset: "reviewer"}})
	if err != nil {
		t.Fatal(err)
	}
	prompts = nil
	out, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID, Continue: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.KickoffSent || len(prompts) != 0 || !out.GoalCreated || out.GoalPaused {
		t.Fatalf("outcome %+v prompts %d: no kickoff may be sent when the pause failed", out, len(prompts))
	}
	w := strings.Join(out.Warnings, "\n")
	if !strings.Contains(w, "goal.pause failed") || !strings.Contains(w, "cleared") || !strings.Contains(w, "cancelled") {
		t.Fatalf("warnings must say pause failed, the goal was cleared and the target cancelled:\n%s", w)
	}
	tgt, _ := r.db.GetSession(ctx, out.TargetSessionID)
	goals, err := r.hosts[0].(*fake.Host).Goals(tgt.NativeSessionID)
	if err != nil || len(goals) != 1 || goals[0].Status != "cleared" {
		t.Fatalf("goal state %+v: goal.clear must have been tried", goals)
	}
}

// TestMigrationRefusedBeforeMutation: a target without goal.pause is
// refused with unavailable naming it, before any worker or target exists.
func TestMigrationRefusedBeforeMutation(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		var prompts []string
		lacking := named{Host: fake.New(fake.Options{Missing: []string{core.CapGoalPause}}), name: "fake-nopause"}
		o := fake.Options{Script: workerScript(&prompts)}
		r := newRig(t, rigOptions{open: open, fake: o, extra: []core.BridgeHost{lacking}})
		src := r.create()
		r.prompt(src.ID, "say work")
		before, _, _ := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
		_, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Harness: "fake-nopause"}})
		var ce *core.Error
		if core.ErrorCode(err) != core.CodeUnavailable || !strings.Contains(err.Error(), "goal.pause") {
			t.Fatalf("err %v, want unavailable naming goal.pause", err)
		}
		if asErr(err, &ce); fmt.Sprint(ce.Missing) != "[goal.pause]" {
			t.Fatalf("data.missing = %v", ce.Missing)
		}
		after, _, _ := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
		if len(after) != len(before) {
			t.Fatalf("sessions %d -> %d: nothing may be created before the refusal", len(before), len(after))
		}
		// A model change alone still needs goal.pause: the target has goals, so the handoff would travel in one.
		if _, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Harness: "fake-nopause", Model: "fake-small"}}); core.ErrorCode(err) != core.CodeUnavailable {
			t.Fatalf("preview checks with the default injection (goal where goal.create exists): %v", err)
		}
	})
}

func asErr(err error, target **core.Error) bool {
	e, ok := err.(*core.Error)
	if ok {
		*target = e
	}
	return ok
}

// TestMigrationExecuteInAnotherProcess: a preview written by one process
// (bridge migrate preview) is executed by another (bridge migrate execute).
func TestMigrationExecuteInAnotherProcess(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		var prompts []string
		r, src := migrationRig(t, open, fake.Options{}, &prompts)
		p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Preset: "reviewer"}})
		if err != nil {
			t.Fatal(err)
		}
		r.svc.Close(ctx)
		var prompts2 []string
		r2 := newRig(t, rigOptions{db: r.db, dir: r.dir, fake: fake.Options{Script: workerScript(&prompts2)},
			presets: []core.Preset{{Name: "reviewer", Harness: "fake"}}})
		out, err := r2.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID, Inject: "prompt"})
		if err != nil || !out.KickoffSent || out.GoalCreated {
			t.Fatalf("%+v %v", out, err)
		}
		if _, err := r2.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: "../etc/passwd"}); core.ErrorCode(err) != core.CodeNotFound {
			t.Fatalf("a path as preview id: %v, want not_found", err)
		}
	})
}

// TestMigrationImages: an answered image travels as its answer under
// "Visual evidence"; an unanswered one is marked unresolved and, for a
// target, its image (kept by Bridge) goes with the kickoff, and the target's
// answer decides: a vision model takes it, a text-only one refuses it at
// admission and then gets the text handoff with an explicit warning.
func TestMigrationImages(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
		for _, c := range []struct {
			model  string
			sent   bool
			signal string
		}{{"fake-large", true, "sent with the kickoff; the target accepted them"}, {"fake-small", false, "the target refused the 1 unresolved image(s) at admission"}} {
			t.Run(c.model, func(t *testing.T) {
				var prompts []string
				script := workerScript(&prompts)
				r := newRig(t, rigOptions{open: open, fake: fake.Options{VisionAdmission: true, Script: func(p string) []fake.Step {
					if strings.HasPrefix(p, "LOOK AT THIS") {
						return []fake.Step{} // no answer: the image stays unresolved
					}
					return script(p)
				}}})
				src := r.create()
				img := schema.Content{Type: "image", MediaType: "image/png", Data: png}
				if _, err := r.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: src.ID, Content: []schema.Content{img, {Type: "text", Text: "say the diagram shows PORT=57431"}}}); err != nil {
					t.Fatal(err)
				}
				if _, err := r.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: src.ID, Content: []schema.Content{img, {Type: "text", Text: "LOOK AT THIS second diagram"}}}); err != nil {
					t.Fatal(err)
				}
				// The image is kept once, in the record.
				raw, _ := base64.StdEncoding.DecodeString(png)
				sum := sha256.Sum256(raw)
				if a, data, err := r.db.GetAttachment(ctx, hex.EncodeToString(sum[:])); err != nil || !bytes.Equal(data, raw) || a.MediaType != "image/png" {
					t.Fatalf("kept image: %+v %d bytes %v, want the prompt's image", a, len(data), err)
				}
				if n := countRows(t, r.db, "attachments"); n != 1 {
					t.Fatalf("%d attachments kept, want the one image once", n)
				}
				p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Model: c.model}})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(p.Summary, "Visual evidence") || !strings.Contains(p.Summary, "PORT=57431") || !strings.Contains(p.Summary, "## Unresolved images") {
					t.Fatalf("preview summary:\n%s", p.Summary)
				}
				out, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID, Inject: "prompt"})
				if err != nil || !out.KickoffSent {
					t.Fatalf("%+v %v", out, err)
				}
				if !strings.Contains(strings.Join(out.Warnings, "\n"), c.signal) {
					t.Fatalf("warnings %q should say %q", out.Warnings, c.signal)
				}
				var kicked map[string]any
				for _, e := range r.branch(out.TargetSessionID) {
					if e.Kind == core.KindUserMessage {
						kicked = payload(t, e)
					}
				}
				if sent := kicked["images"] != nil; sent != c.sent {
					t.Fatalf("kickoff payload %v: images sent %v, want %v", kicked, sent, c.sent)
				}
				// The text-only target's kickoff says plainly that an image went
				// unseen; the vision target's does not need to.
				if note := strings.Contains(fmt.Sprint(kicked["text"]), "They remain unresolved"); note == c.sent {
					t.Fatalf("kickoff text %q: unresolved note %v, want %v", kicked["text"], note, !c.sent)
				}
			})
		}
	})
}

func TestPromptRefusesBadImages(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	for _, c := range []schema.Content{
		{Type: "image", MediaType: "image/bmp", Data: "AAAA"},
		{Type: "image", MediaType: "image/png", Data: "not base64!"},
	} {
		if _, err := r.svc.SessionPrompt(context.Background(), schema.SessionPromptParams{SessionID: s.ID, Content: []schema.Content{c}}); core.ErrorCode(err) != core.CodeInvalid {
			t.Fatalf("%s: %v, want invalid", c.MediaType, err)
		}
	}
}

// TestMigrationExecuteReadsOnlyAHandoff: migration/execute with a path
// reads a regular, bounded file holding a handoff; a device, a FIFO, a
// kernel file, /etc/passwd or binary data is refused before anything
// starts, and the preview can still be executed afterwards.
func TestMigrationExecuteReadsOnlyAHandoff(t *testing.T) {
	ctx := context.Background()
	var prompts []string
	r, src := migrationRig(t, nil, fake.Options{}, &prompts)
	p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Preset: "reviewer"}})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	prompts = nil
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "fifo.md")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(tmp, "binary.md")
	os.WriteFile(binary, []byte("## Goal\n\x00\xff\xfe"), 0o600)
	huge := filepath.Join(tmp, "huge.md")
	os.WriteFile(huge, []byte("## Goal\n"+strings.Repeat("x", maxHandoffBytes)), 0o600)
	sessionsBefore, _, _ := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
	for _, path := range []string{"/etc/passwd", "/dev/zero", "/proc/self/environ", fifo, binary, huge, tmp} {
		_, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID, Path: path})
		if core.ErrorCode(err) != core.CodeInvalid || len(err.Error()) > 400 {
			t.Errorf("%s: want a short invalid error, got %v", path, err)
		}
	}
	if after, _, _ := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true}); len(after) != len(sessionsBefore) || len(prompts) != 0 {
		t.Fatalf("a refused execute started something: %d sessions (was %d), prompts %q", len(after), len(sessionsBefore), prompts)
	}
	if _, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID}); err != nil {
		t.Fatalf("execute after the refusals: %v", err)
	}
}

// maxHandoffBytes mirrors service.MaxHandoffBytes (this file does not
// import the package under its name).
const maxHandoffBytes = 4 << 20

// TestMigrationExecuteSummary: migration/execute with the edited handoff
// inline (summary) sends that text, and refuses what it would refuse in a
// file, before anything starts.
func TestMigrationExecuteSummary(t *testing.T) {
	ctx := context.Background()
	var prompts []string
	r, src := migrationRig(t, nil, fake.Options{}, &prompts)
	p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Preset: "reviewer"}})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	prompts = nil
	sessionsBefore, _, _ := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
	for name, params := range map[string]schema.MigrationExecuteParams{
		"NUL":         {Summary: "## Goal\nx\x00y"},
		"not UTF-8":   {Summary: "## Goal\n\xff\xfe"},
		"no headings": {Summary: "just some words"},
		"blank":       {Summary: " \n\t"},
		"too big":     {Summary: "## Goal\n" + strings.Repeat("x", maxHandoffBytes)},
		"both":        {Summary: "## Goal\nx", Path: "/tmp/x.md"},
	} {
		params.PreviewID = p.PreviewID
		_, err := r.svc.MigrationExecute(ctx, params)
		if core.ErrorCode(err) != core.CodeInvalid || len(err.Error()) > 400 {
			t.Errorf("%s: want a short invalid error, got %v", name, err)
		}
	}
	if after, _, _ := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true}); len(after) != len(sessionsBefore) || len(prompts) != 0 {
		t.Fatalf("a refused execute started something: %d sessions (was %d), prompts %q", len(after), len(sessionsBefore), prompts)
	}
	edited := strings.Replace(p.Summary, "## Goal\n", "## Goal\nThe budget is 4242 requests per second.\n", 1)
	if edited == p.Summary {
		t.Fatalf("preview has no Goal heading:\n%s", p.Summary)
	}
	res, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID, Summary: edited})
	if err != nil {
		t.Fatalf("execute with summary: %v", err)
	}
	if res.TargetSessionID == "" || len(prompts) == 0 || !strings.Contains(strings.Join(prompts, "\n"), "4242 requests per second") {
		t.Fatalf("the target's kickoff does not carry the edit: result %+v, prompts %q", res, prompts)
	}
}

// TestMigrationSummaryBudget holds the summary budget: a handoff over it
// gets one repair request to the same worker; one still over is marked
// overBudget, and migration/execute refuses it (creating nothing) unless it
// was edited within the budget or allowOverBudget is given. Visual evidence
// is not counted.
func TestMigrationSummaryBudget(t *testing.T) {
	ctx := context.Background()
	long := strings.Replace(handoffText, "The parser works;", "The parser works; "+strings.Repeat("and it is fast ", 40), 1)
	const budget = 400
	if n := handoff.SummaryChars(handoffText); n > budget {
		t.Fatalf("the short handoff is %d characters, over %d", n, budget)
	}
	var prompts []string
	repairFits := true
	o := fake.Options{Script: func(p string) []fake.Step {
		prompts = append(prompts, p)
		switch {
		case strings.Contains(p, "You write handoffs"):
			return []fake.Step{{Op: fake.OpJSON, Text: long}}
		case strings.Contains(p, "Your handoff is"):
			if repairFits {
				return []fake.Step{{Op: fake.OpJSON, Text: handoffText}}
			}
			return []fake.Step{{Op: fake.OpJSON, Text: strings.Replace(long, "fast ", "quick ", 3)}}
		}
		return nil
	}}
	r := newRig(t, rigOptions{fake: o, presets: []core.Preset{{Name: "reviewer", Harness: "fake"}}})
	src := r.create()
	r.prompt(src.ID, "say budget is 4096 tokens")
	workers := func() int {
		all, _, _ := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
		return len(all)
	}

	t.Run("one repair brings it within budget", func(t *testing.T) {
		prompts = nil
		before := workers()
		p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Preset: "reviewer"}, SummaryCharBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		if len(prompts) != 2 || !strings.Contains(prompts[1], fmt.Sprintf("Your handoff is %d characters, over its %d-character limit", handoff.SummaryChars(long), budget)) {
			t.Fatalf("worker prompts %q: want the instruction, then one repair request", prompts)
		}
		if workers() != before+1 {
			t.Errorf("the repair must go to the same worker: %d sessions more", workers()-before)
		}
		if p.OverBudget || p.SummaryChars != handoff.SummaryChars(handoffText) || p.SummaryCharBudget != budget || p.Stats["workerRequests"] != 2 {
			t.Fatalf("preview overBudget %v, %d/%d chars, stats %v", p.OverBudget, p.SummaryChars, p.SummaryCharBudget, p.Stats)
		}
		if _, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID}); err != nil {
			t.Fatalf("a handoff within budget executes: %v", err)
		}
	})

	repairFits = false
	over := func(t *testing.T) schema.MigrationPreviewResult {
		t.Helper()
		prompts = nil
		p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Preset: "reviewer"}, SummaryCharBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		if len(prompts) != 2 || !p.OverBudget || p.SummaryChars <= budget || p.SummaryChars != handoff.SummaryChars(p.Summary) {
			t.Fatalf("%d worker prompts; preview overBudget %v, %d chars: want one repair, then overBudget", len(prompts), p.OverBudget, p.SummaryChars)
		}
		if !strings.Contains(strings.Join(p.Warnings, "\n"), "even after one repair request") {
			t.Errorf("warnings %q", p.Warnings)
		}
		return p
	}
	t.Run("still over: execute refuses, an edit within budget passes", func(t *testing.T) {
		p := over(t)
		before := workers()
		_, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID})
		var ce *core.Error
		var ob *handoff.OverBudgetError
		if !errors.As(err, &ce) || ce.Code != core.CodeInvalid || ce.Field != "allowOverBudget" || !errors.As(err, &ob) || ob.Chars != p.SummaryChars {
			t.Fatalf("execute of an over-budget handoff: %v (%+v)", err, ce)
		}
		if workers() != before {
			t.Fatal("a refused execute created a session")
		}
		// Visual evidence does not count: an edit within budget plus a long
		// evidence section passes.
		edited := handoffText + "\n## Visual evidence — verbatim, not summarized\n" + strings.Repeat("pixel ", 200) + "\n"
		if err := os.WriteFile(p.Path, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID})
		if err != nil || !out.KickoffSent {
			t.Fatalf("execute after an edit within budget: %+v %v", out, err)
		}
	})
	t.Run("still over: allowOverBudget sends it", func(t *testing.T) {
		p := over(t)
		out, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID, AllowOverBudget: true})
		if err != nil || !out.KickoffSent || !strings.Contains(strings.Join(out.Warnings, "\n"), "as allowOverBudget asked") {
			t.Fatalf("execute with allowOverBudget: %+v %v", out, err)
		}
	})
}

// providerHost is a fake host under another harness's name whose models
// carry a provider prefix ("anthropic/fake-large"), as OpenCode names
// them; it starts the fake model underneath.
type providerHost struct {
	named
	prefix string
}

func (p providerHost) Models(ctx context.Context) ([]core.Model, error) {
	ms, err := p.Host.Models(ctx)
	for i := range ms {
		ms[i].ID = p.prefix + ms[i].ID
	}
	return ms, err
}

func (p providerHost) CreateSession(ctx context.Context, req core.CreateRequest, sink core.EventSink) (core.Live, error) {
	req.Model = strings.TrimPrefix(req.Model, p.prefix)
	return p.Host.CreateSession(ctx, req, sink)
}

// TestMigrationCarriesModelAcrossHarnesses: the source's model, its
// provider and its effort reach a target on another harness by the pair's
// table (Claude Code's bare Anthropic id becomes OpenCode's
// "anthropic/<id>"); a pair with no shared provider carries none, and says so.
func TestMigrationCarriesModelAcrossHarnesses(t *testing.T) {
	ctx := context.Background()
	var prompts []string
	o := fake.Options{Script: workerScript(&prompts)}
	claude := named{Host: fake.New(o), name: "claude-code"}
	opencode := providerHost{named: named{Host: fake.New(o), name: "opencode"}, prefix: "anthropic/"}
	codex := named{Host: fake.New(o), name: "codex"}
	r := newRig(t, rigOptions{fake: o, extra: []core.BridgeHost{claude, opencode, codex}})
	created, err := r.svc.SessionCreate(ctx, schema.SessionCreateParams{Harness: "claude-code", Cwd: t.TempDir(), Model: "fake-large", Effort: "high"})
	if err != nil {
		t.Fatal(err)
	}
	r.prompt(created.SessionID, "say the port is 55837")
	for _, c := range []struct {
		harness, model, effort string
		carried                bool
	}{{"opencode", "anthropic/fake-large", "high", true}, {"codex", "", "", false}} {
		p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: created.SessionID, Target: schema.MigrationTarget{Harness: c.harness}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID, Inject: "prompt"})
		if err != nil {
			t.Fatal(err)
		}
		tgt, _ := r.db.GetSession(ctx, out.TargetSessionID)
		if out.ModelTransferred != c.carried || tgt.Model != c.model || tgt.Effort != c.effort {
			t.Errorf("%s target: model %q effort %q (transferred %v), want %q %q", c.harness, tgt.Model, tgt.Effort, out.ModelTransferred, c.model, c.effort)
		}
		if said := strings.Contains(strings.Join(out.Warnings, "\n"), "is not carried across harnesses"); said == c.carried {
			t.Errorf("%s target: warnings %q", c.harness, out.Warnings)
		}
	}
}

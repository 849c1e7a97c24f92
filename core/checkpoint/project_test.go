package checkpoint

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

func TestProject(t *testing.T) {
	b := newBranch()
	b.add(core.KindModelChanged, map[string]any{"model": "old-model"})
	b.user("build the parser")
	b.commit(validCP("first checkpoint", "d1"), "")
	b.add(core.KindEffortChanged, map[string]any{"effort": "high"})
	u := b.user("now the tests")
	b.toolStart("t1")
	b.toolDone("t1")
	a := b.assistant("tests written")

	p, err := Project(b.entries, ProjectOptions{Model: "current-model"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Checkpoint.Summary != "first checkpoint" || !reflect.DeepEqual(p.Checkpoint.Decisions, []string{"d1"}) {
		t.Errorf("checkpoint = %+v", p.Checkpoint)
	}
	// effort.changed is conversation, kept; the marker and boundary are not.
	wantIDs := []string{"e6", u, "e8", "e9", a}
	if got := ids(p.Retained); !reflect.DeepEqual(got, wantIDs) {
		t.Errorf("retained = %v, want %v", got, wantIDs)
	}
	if p.Model != "current-model" || p.Effort != "high" {
		t.Errorf("model/effort = %q/%q", p.Model, p.Effort)
	}
	if p2, _ := Project(b.entries, ProjectOptions{}); p2.Model != "old-model" {
		t.Errorf("model from branch = %q", p2.Model)
	}

	text := Render(p)
	sum := strings.Index(text, "## Summary\n\nfirst checkpoint")
	for _, h := range []string{"## Decisions", "## Model", "## Activity after the checkpoint"} {
		if i := strings.Index(text, h); i < 0 || i < sum {
			t.Errorf("rendered text lacks %q after the summary:\n%s", h, text)
		}
	}
	for _, want := range []string{"- d1", "- model: current-model", "- reasoning effort: high", "[user] now the tests",
		"[Bash call t1]", "[Bash result t1]", "[assistant] tests written"} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered text lacks %q:\n%s", want, text)
		}
	}
	if sum < 0 || strings.Index(text, "##") != sum {
		t.Errorf("the summary is not the first section:\n%s", text)
	}
}

func TestProjectFallsBackFromInvalidNewest(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(b *branchBuilder)
	}{
		{"empty summary", func(b *branchBuilder) {
			bad := validCP("x")
			bad.Summary = ""
			b.commit(bad, "")
		}},
		{"payload not a checkpoint", func(b *branchBuilder) {
			b.add(core.KindCheckpoint, map[string]any{"summary": 12})
			b.add(core.KindCompaction, map[string]any{"checkpointEntryId": b.entries[len(b.entries)-1].ID})
		}},
		{"points at a missing entry", func(b *branchBuilder) {
			b.add(core.KindCompaction, map[string]any{"checkpointEntryId": "nowhere"})
		}},
		{"points at a non-checkpoint", func(b *branchBuilder) {
			id := b.user("not a checkpoint")
			b.add(core.KindCompaction, map[string]any{"checkpointEntryId": id})
		}},
		{"schema version 2", func(b *branchBuilder) {
			bad := validCP("future")
			bad.SchemaVersion = 2
			b.add(core.KindCheckpoint, bad)
			b.add(core.KindCompaction, map[string]any{"checkpointEntryId": b.entries[len(b.entries)-1].ID})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBranch()
			b.user("one")
			good := b.commit(validCP("good one", "kept"), "")
			after := b.user("two")
			tt.breakIt(b)
			last := b.user("three")
			p, err := Project(b.entries, ProjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.CheckpointEntryID != good || p.Checkpoint.Summary != "good one" {
				t.Errorf("used %s (%q), want %s", p.CheckpointEntryID, p.Checkpoint.Summary, good)
			}
			if len(p.Skipped) != 1 || p.Skipped[0].Problem == "" {
				t.Errorf("skipped = %+v", p.Skipped)
			}
			got := ids(p.Retained)
			if got[0] != after || got[len(got)-1] != last {
				t.Errorf("retained = %v", got)
			}
		})
	}
}

func TestProjectNoCheckpoint(t *testing.T) {
	b := newBranch()
	b.user("hi")
	_, err := Project(b.entries, ProjectOptions{})
	if !errors.Is(err, ErrNoCheckpoint) || core.ErrorCode(err) != core.CodeNotFound || !strings.Contains(err.Error(), "no checkpoint") {
		t.Fatalf("err = %v", err)
	}
	b.add(core.KindCompaction, map[string]any{"checkpointEntryId": "gone"})
	_, err = Project(b.entries, ProjectOptions{})
	if !errors.Is(err, ErrNoCheckpoint) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("err = %v, want the reason naming the broken boundary", err)
	}
}

func TestProjectBudgetNeverSplitsToolPair(t *testing.T) {
	b := newBranch()
	b.commit(validCP("S"), "")
	b.user("u1")
	s1 := b.toolStart("t1")
	b.toolStart("t2")
	b.assistant("a1")
	b.toolDone("t2")
	b.toolDone("t1")
	b.assistant("a2")
	for _, budget := range []RetainPolicy{{KeepMessages: 2}, {TokenBudget: 30}} {
		p, err := Project(b.entries, ProjectOptions{Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		got := ids(p.Retained)
		if got[0] != s1 || !p.Widened || p.Omitted != 1 {
			t.Errorf("budget %+v: retained %v (widened %v, omitted %d), want start at %s", budget, got, p.Widened, p.Omitted, s1)
		}
		assertNoSplitPairs(t, p.Retained)
		if !strings.Contains(Render(p), "(1 earlier entries omitted)") {
			t.Errorf("render does not say what was omitted")
		}
	}
	// A generous budget keeps everything.
	p, _ := Project(b.entries, ProjectOptions{Budget: RetainPolicy{KeepMessages: 10}})
	if p.Omitted != 0 || len(p.Retained) != 7 || p.Widened {
		t.Errorf("generous budget: %d retained, %d omitted", len(p.Retained), p.Omitted)
	}
}

// assertNoSplitPairs fails when a kept tool.completed has no kept
// tool.started of its id before it.
func assertNoSplitPairs(t *testing.T, es []core.Entry) {
	t.Helper()
	started := map[string]bool{}
	for _, e := range es {
		switch e.Kind {
		case core.KindToolStarted:
			started[toolID(e.Payload)] = true
		case core.KindToolCompleted:
			if !started[toolID(e.Payload)] {
				t.Errorf("tool %s completed without its start: %v", toolID(e.Payload), ids(es))
			}
		}
	}
}

func TestProjectRetainedFromPlannedEntry(t *testing.T) {
	b := newBranch()
	b.user("u1")
	keep := b.user("u2")
	b.assistant("a2")
	b.commit(validCP("S"), keep)
	b.user("u3")
	p, err := Project(b.entries, ProjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{keep, "e3", "e7"}
	if got := ids(p.Retained); !reflect.DeepEqual(got, want) {
		t.Errorf("retained = %v, want %v", got, want)
	}
}

func TestPlanRetention(t *testing.T) {
	b := newBranch()
	b.user("before the boundary")
	b.commit(validCP("S"), "")
	u1 := b.user("u1")
	s1 := b.toolStart("t1")
	b.assistant("a1")
	b.toolDone("t1")
	a2 := b.assistant("a2")
	b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})

	tests := []struct {
		name    string
		policy  RetainPolicy
		wantID  string
		widened bool
		msgs    int
	}{
		{"keep nothing", RetainPolicy{}, "", false, 0},
		{"last message only", RetainPolicy{KeepMessages: 1}, a2, false, 1},
		{"two messages: cut moves to the tool start", RetainPolicy{KeepMessages: 2}, s1, true, 2},
		{"three messages", RetainPolicy{KeepMessages: 3}, u1, false, 3},
		{"more than there are: stops at the boundary", RetainPolicy{KeepMessages: 50}, u1, false, 3},
		{"tiny token budget keeps nothing", RetainPolicy{TokenBudget: 1}, "", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanRetention(b.entries, tt.policy)
			if plan.FirstRetainedEntryID != tt.wantID || plan.Widened != tt.widened || plan.Messages != tt.msgs {
				t.Errorf("plan = %+v, want id %q widened %v messages %d", plan, tt.wantID, tt.widened, tt.msgs)
			}
			if plan.Index >= 0 {
				assertNoSplitPairs(t, b.entries[plan.Index:])
			}
		})
	}
}

func TestProjectLeavesOutCheckpointExchanges(t *testing.T) {
	b := newBranch()
	b.user("u1")
	keep := b.user("u2")
	a2 := b.assistant("a2")
	// A request whose process died: the conversation after it is real.
	b.add(core.KindCompactionRequest, Request{Reason: ReasonBeforeShutdown})
	chat := b.user("after the restart")
	// The exchange that produced the checkpoint, with one repair.
	b.add(core.KindCompactionRequest, Request{Reason: ReasonManual})
	b.user("Bridge checkpoint request ...")
	b.assistant("sorry, no JSON")
	b.add(core.KindCompactionRequest, Request{Reason: ReasonManual, Attempt: 1, RepairOf: "no object"})
	b.user("Your checkpoint reply could not be used ...")
	b.assistant(`{"summary":"S"}`)
	b.commit(validCP("S"), keep)
	last := b.user("u3")

	p, err := Project(b.entries, ProjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{keep, a2, chat, last}
	if got := ids(p.Retained); !reflect.DeepEqual(got, want) {
		t.Errorf("retained = %v, want %v", got, want)
	}
}

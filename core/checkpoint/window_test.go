package checkpoint

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// randomBranch builds a branch of n entries of the kinds the window reads,
// with ids reused, requests answered and not, commits whose boundary names
// its checkpoint or something else, and malformed ids.
func randomBranch(r *rand.Rand, n int) []core.Entry {
	b := newBranch()
	addRandom(b, r, n, true)
	return b.entries
}

// addRandom appends n random entries to b (commits only when commits).
func addRandom(b *branchBuilder, r *rand.Rand, n int, commits bool) {
	n += len(b.entries)
	ids := []string{"a", "b", "c"}
	words := []string{"x", " y ", "", "z", "x"}
	pick := func(l []string) string { return l[r.Intn(len(l))] }
	for len(b.entries) < n {
		switch r.Intn(15) {
		case 0, 1:
			b.add(core.KindUserMessage, map[string]any{"text": pick(words)})
		case 2:
			b.add(core.KindAssistantMessage, map[string]any{"text": pick(words)})
		case 3:
			var id any = pick(ids)
			if r.Intn(6) == 0 {
				id = 7
			}
			b.add(core.KindToolStarted, map[string]any{"toolId": id})
		case 4:
			b.add(core.KindToolCompleted, map[string]any{"toolId": pick(ids)})
		case 5:
			b.add(core.KindApprovalRequested, map[string]any{"approvalId": pick(ids)})
		case 6:
			b.add(core.KindApprovalResolved, map[string]any{"approvalId": pick(ids)})
		case 7:
			b.add(core.KindWorkerResult, map[string]any{"status": pick([]string{"completed", "failed"}),
				"decisions": []any{pick(words), 1, pick(words)}, "filesChanged": []any{pick(ids) + ".go"}})
		case 8:
			b.add(core.KindArtifactCreated, map[string]any{"path": pick(ids) + ".md"})
		case 9:
			b.add(core.KindCompactionRequest, map[string]any{"reason": "manual", "attempt": r.Intn(2)})
		case 10:
			b.add(core.KindCompactionFailed, map[string]any{"reason": "manual"})
		case 11:
			if !commits {
				continue
			}
			cp := b.add(core.KindCheckpoint, map[string]any{"summary": "s", "decisions": []any{pick(words), pick(words)}})
			ref := cp
			if r.Intn(5) == 0 {
				ref = fmt.Sprintf("e%d", 1+r.Intn(len(b.entries))) // an older entry, perhaps an older checkpoint
			}
			b.add(core.KindCompaction, map[string]any{"checkpointEntryId": ref})
			b.add(core.KindBranchSummary, map[string]any{"summary": "m"})
		case 12:
			b.add(core.KindModelChanged, map[string]any{"model": pick([]string{"m1", "m2", ""})})
		case 13:
			b.add(core.KindEffortChanged, map[string]any{"effort": pick([]string{"low", "high"})})
		default:
			b.add(core.KindContextUsage, map[string]any{"used": 1})
		}
		b.entries[len(b.entries)-1].TokenEstimate = int64(r.Intn(30))
	}
}

// TestWindowMatchesWholeBranchScans: on random branches, the window
// summary folded one entry at a time answers what scans of the whole branch
// written independently here answer (activity, evidence, the lock, the
// conversation kept by a projection, the token sum, the last user goal, the
// model and effort), after every entry.
func TestWindowMatchesWholeBranchScans(t *testing.T) {
	start := time.Date(2026, 11, 30, 9, 0, 30, 0, time.UTC)
	for seed := int64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		branch := randomBranch(r, 1+r.Intn(60))
		var w core.Window
		for i, e := range branch {
			Track(&w, e)
			prefix := branch[:i+1]
			where := fmt.Sprintf("seed %d, after entry %d (%s)", seed, i+1, e.Kind)
			if got, want := ActivityOf(w), refActivity(prefix); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: activity\n got %+v\nwant %+v", where, got, want)
			}
			if got, want := EvidenceOf(w), refEvidence(prefix); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: evidence\n got %+v\nwant %+v", where, got, want)
			}
			if got, want := PendingOf(w, start), FindPending(prefix, start); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: lock\n got %+v\nwant %+v", where, got, want)
			}
			b := LastBoundary(prefix)
			tail := prefix[b+1:]
			if got, want := w.Conversation, int64(len(conversation(tail))); got != want {
				t.Fatalf("%s: conversation %d, want %d", where, got, want)
			}
			var kept []string
			for _, e := range tail {
				if !e.Kind.Bookkeeping() && !dropped(w, e.Seq) {
					kept = append(kept, e.ID)
				}
			}
			if got, want := kept, ids(conversation(tail)); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("%s: kept by the dropped spans %v, conversation %v", where, got, want)
			}
			var tokens int64
			lastUser := ""
			for _, e := range tail {
				tokens += e.TokenEstimate
				if e.Kind == core.KindUserMessage && strings.TrimSpace(textOf(e.Payload)) != "" {
					lastUser = e.ID
				}
			}
			if w.Tokens != tokens || w.Entries != int64(len(tail)) || w.LastUserID != lastUser {
				t.Fatalf("%s: tokens %d entries %d last user %q, want %d %d %q", where, w.Tokens, w.Entries, w.LastUserID, tokens, len(tail), lastUser)
			}
			if m, e := latestModelEffort(prefix); w.Model != m || w.Effort != e {
				t.Fatalf("%s: model %q effort %q, want %q %q", where, w.Model, w.Effort, m, e)
			}
		}
	}
}

func dropped(w core.Window, seq int64) bool {
	for _, s := range w.Dropped {
		if s.Contains(seq) {
			return true
		}
	}
	return false
}

// refActivity is BranchActivity written as a scan of the whole branch.
func refActivity(branch []core.Entry) Activity {
	a := Activity{BoundaryIndex: -1}
	b := LastBoundary(branch)
	type open struct {
		order []string
		n     map[string]int
	}
	tools, approvals := &open{n: map[string]int{}}, &open{n: map[string]int{}}
	opn := func(o *open, id string) {
		if o.n[id] == 0 {
			o.order = append(o.order, id)
		}
		o.n[id]++
	}
	cls := func(o *open, id string) {
		if o.n[id] == 0 {
			return
		}
		if o.n[id]--; o.n[id] == 0 {
			for i, x := range o.order {
				if x == id {
					o.order = append(o.order[:i], o.order[i+1:]...)
					break
				}
			}
		}
	}
	inExchange, provisional := false, false
	work := func() {
		if inExchange {
			provisional = true
		} else {
			a.MeaningfulWork, a.WorkerDone = true, false
		}
	}
	for _, e := range branch[b+1:] {
		switch e.Kind {
		case core.KindToolStarted:
			opn(tools, toolID(e.Payload))
		case core.KindToolCompleted:
			cls(tools, toolID(e.Payload))
			work()
		case core.KindApprovalRequested:
			opn(approvals, approvalID(e.Payload))
		case core.KindApprovalResolved:
			cls(approvals, approvalID(e.Payload))
		case core.KindUserMessage, core.KindAssistantMessage, core.KindArtifactCreated:
			work()
		case core.KindWorkerResult:
			work()
			if !inExchange {
				a.WorkerDone = memberString(e.Payload, "status") == "completed"
			}
		case core.KindCompactionRequest:
			if inExchange && requestAttempt(e.Payload) == 0 && provisional {
				a.MeaningfulWork = true
			}
			inExchange, provisional = true, false
		case core.KindCompactionFailed:
			inExchange, provisional = false, false
		}
	}
	if provisional {
		a.MeaningfulWork = true
	}
	if len(tools.order) > 0 {
		a.ToolsInFlight = tools.order
	}
	if len(approvals.order) > 0 {
		a.ApprovalsPending = approvals.order
	}
	return a
}

// refEvidence is ScanEvidence written as a scan of the whole branch.
func refEvidence(branch []core.Entry) Evidence {
	b := LastBoundary(branch)
	var ev Evidence
	var decisions, files []string
	if b >= 0 {
		ev.BoundaryEntryID = branch[b].ID
		ref := memberString(branch[b].Payload, "checkpointEntryId")
		for i := b - 1; i >= 0; i-- {
			if branch[i].Kind == core.KindCheckpoint {
				if branch[i].ID == ref {
					eachMemberString(branch[i].Payload, "decisions", func(s []byte) { decisions = Dedupe(append(decisions, string(s))) })
				}
				break
			}
		}
	}
	ev.Scanned = len(branch) - b - 1
	for _, e := range branch[b+1:] {
		switch e.Kind {
		case core.KindWorkerResult:
			eachMemberString(e.Payload, "decisions", func(s []byte) { decisions = Dedupe(append(decisions, string(s))) })
			eachMemberString(e.Payload, "filesChanged", func(s []byte) { files = Dedupe(append(files, string(s))) })
		case core.KindArtifactCreated:
			files = Dedupe(append(files, memberString(e.Payload, "path")))
		case core.KindCheckpoint:
			eachMemberString(e.Payload, "decisions", func(s []byte) { decisions = Dedupe(append(decisions, string(s))) })
		}
	}
	ev.Decisions, ev.Files = decisions, files
	return ev
}

// TestProjectTailMatchesProject: on random branches whose newest boundary
// commits a valid checkpoint (retaining from an earlier entry or from its
// marker), ProjectTail on any tail of the branch either asks for more or
// gives exactly Project's projection of the whole branch; the complete tail
// never asks for more.
func TestProjectTailMatchesProject(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		b := newBranch()
		addRandom(b, r, r.Intn(30), true)
		first := ""
		if n := len(b.entries); n > 0 && r.Intn(3) > 0 {
			first = b.entries[r.Intn(n)].ID // perhaps before an older boundary: then Project starts after this one
		}
		cpID, marker := "cp", "mk"
		if first == "" {
			first = marker
		}
		for _, ne := range CommitEntries(Checkpoint{SchemaVersion: 1, Summary: "s", FirstRetainedEntryID: first}, cpID, marker) {
			id := ne.ID
			if id == "" {
				id = fmt.Sprintf("e%d", len(b.entries)+1)
			}
			b.addID(id, ne.Kind, json.RawMessage(ne.Payload))
		}
		addRandom(b, r, r.Intn(80), false)
		branch := b.entries
		for i := range branch {
			branch[i].TokenEstimate = int64(1 + r.Intn(40))
		}
		budget := RetainPolicy{TokenBudget: int64(20 + r.Intn(600))}
		want, err := Project(branch, ProjectOptions{Budget: budget})
		if err != nil {
			t.Fatalf("seed %d: Project: %v", seed, err)
		}
		w := WindowOf(branch)
		bi := LastBoundary(branch)
		var before []core.Entry
		for i := 0; i < bi; i++ {
			if branch[i].ID == first {
				before = branch[i : bi+1]
			}
		}
		var cp core.Entry
		for _, e := range branch {
			if e.ID == cpID {
				cp = e
			}
		}
		for from := len(branch); from > bi; from-- {
			in := TailInput{Window: w, Checkpoint: cp, Before: before, Tail: branch[from:], Complete: from == bi+1}
			got, more, err := ProjectTail(in, ProjectOptions{Budget: budget})
			if err != nil {
				t.Fatalf("seed %d, tail from %d: %v", seed, from, err)
			}
			if more {
				if in.Complete {
					t.Fatalf("seed %d: the complete tail asks for more", seed)
				}
				continue
			}
			want.Skipped = nil
			if !reflect.DeepEqual(ids(got.Retained), ids(want.Retained)) || got.Omitted != want.Omitted || got.Widened != want.Widened ||
				got.Model != want.Model || got.Effort != want.Effort || got.CheckpointEntryID != want.CheckpointEntryID {
				t.Fatalf("seed %d, tail from %d of %d (boundary at %d):\n got %v omitted %d widened %v\nwant %v omitted %d widened %v",
					seed, from, len(branch), bi, ids(got.Retained), got.Omitted, got.Widened, ids(want.Retained), want.Omitted, want.Widened)
			}
		}
	}
}

// TestProjectForkTailMatchesProjectFork: on random branches with a valid
// checkpoint, an invalid one or none, ProjectForkTail on any tail either
// asks for more, refuses (an unusable checkpoint: the caller reads the
// branch) or gives exactly ProjectFork's projection of the whole branch.
func TestProjectForkTailMatchesProjectFork(t *testing.T) {
	compared := 0
	for seed := int64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		b := newBranch()
		addRandom(b, r, 5+r.Intn(60), seed%3 == 0)
		if seed%3 == 1 {
			for _, ne := range CommitEntries(Checkpoint{SchemaVersion: 1, Summary: "s", FirstRetainedEntryID: "mk"}, "cp", "mk") {
				id := ne.ID
				if id == "" {
					id = fmt.Sprintf("e%d", len(b.entries)+1)
				}
				b.addID(id, ne.Kind, json.RawMessage(ne.Payload))
			}
			addRandom(b, r, r.Intn(40), false)
		}
		branch := b.entries
		for i := range branch {
			branch[i].TokenEstimate = int64(1 + r.Intn(40))
		}
		opt := ProjectOptions{Budget: RetainPolicy{TokenBudget: int64(20 + r.Intn(600))}}
		want := ProjectFork(branch, opt)
		w := WindowOf(branch)
		bi := LastBoundary(branch)
		var cp core.Entry
		for _, e := range branch {
			if e.ID == w.BoundaryCheckpointID {
				cp = e
			}
		}
		for from := len(branch); from > bi; from-- {
			in := TailInput{Window: w, Checkpoint: cp, Tail: branch[from:], Complete: from == bi+1}
			got, more, err := ProjectForkTail(in, opt)
			if err != nil || more {
				if more && in.Complete {
					t.Fatalf("seed %d: the complete tail asks for more", seed)
				}
				continue
			}
			compared++
			if !reflect.DeepEqual(ids(got.Retained), ids(want.Retained)) || got.Omitted != want.Omitted || got.Widened != want.Widened ||
				got.Model != want.Model || got.Effort != want.Effort || got.CheckpointEntryID != want.CheckpointEntryID {
				t.Fatalf("seed %d, tail from %d of %d (boundary at %d):\n got %v omitted %d widened %v cp %q\nwant %v omitted %d widened %v cp %q",
					seed, from, len(branch), bi, ids(got.Retained), got.Omitted, got.Widened, got.CheckpointEntryID,
					ids(want.Retained), want.Omitted, want.Widened, want.CheckpointEntryID)
			}
		}
	}
	if compared < 500 {
		t.Fatalf("only %d projections compared", compared)
	}
}

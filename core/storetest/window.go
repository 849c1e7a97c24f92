package storetest

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
)

// testWindow: Window is what checkpoint.WindowOf gives on the active
// branch, after every kind of change: appends one by one and in runs,
// inside Update, under an older entry (a branch), MoveHead back and forth.
// Random sessions with a fixed seed each, so a failure repeats.
func testWindow(t *testing.T, st core.Store) {
	if _, err := st.Window(ctx, "s_missing"); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("Window of a missing session: %v, want not_found", err)
	}
	empty := newSession(t, st, "fake")
	if w, err := st.Window(ctx, empty.ID); err != nil || w.HeadID != "" || w.Entries != 0 {
		t.Fatalf("Window of an empty session: %+v, %v", w, err)
	}
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			s := newSession(t, st, "fake")
			var all []core.Entry
			for step := 0; step < 60; step++ {
				es := RandomEntries(r, 1+r.Intn(6))
				var out []core.Entry
				var err error
				switch k := r.Intn(10); {
				case k < 6 || len(all) == 0:
					out, err = st.Append(ctx, s.ID, es...)
				case k < 8:
					err = st.Update(ctx, func(w core.Writer) error {
						a, err := w.Append(ctx, s.ID, es[:1]...)
						if err != nil {
							return err
						}
						b, err := w.Append(ctx, s.ID, es[1:]...)
						out = append(a, b...)
						return err
					})
				case k < 9:
					out, err = st.AppendTo(ctx, s.ID, all[r.Intn(len(all))].ID, es...)
				default:
					err = st.MoveHead(ctx, s.ID, all[r.Intn(len(all))].ID)
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				all = append(all, out...)
				got, err := st.Window(ctx, s.ID)
				if err != nil {
					t.Fatalf("step %d: Window: %v", step, err)
				}
				want := checkpoint.WindowOf(branch(t, st, s.ID))
				if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
					t.Fatalf("step %d: Window\n got %s\nwant %s", step, g, w)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// RandomEntries returns n entries of the kinds the window summary reads,
// drawn from r: messages (some blank), tool calls and approvals opened and
// closed (ids reused, some never closed, some closed twice), worker results
// and artifacts with evidence (duplicates, blanks, non-strings), checkpoint
// requests (fresh and repairs) answered or failed, checkpoint commits
// (checkpoint, compaction, marker), model and effort changes, gauge
// readings and malformed payloads of those kinds.
func RandomEntries(r *rand.Rand, n int) []core.NewEntry {
	ids := []string{"a", "b", "c", "d"}
	words := []string{"x", " y ", "", "z", "x"}
	pick := func(list []string) string { return list[r.Intn(len(list))] }
	var out []core.NewEntry
	for len(out) < n {
		var e core.NewEntry
		switch r.Intn(16) {
		case 0, 1:
			e = core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(core.UserMessagePayload{Text: pick(words)})}
		case 2, 3:
			e = core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(core.AssistantMessagePayload{Text: pick(words)})}
		case 4:
			p := core.Payload(core.ToolStartedPayload{ToolID: pick(ids)})
			if r.Intn(6) == 0 {
				p = json.RawMessage(`{"toolId":7}`) // not a string: counts as the empty id
			}
			e = core.NewEntry{Kind: core.KindToolStarted, Payload: p}
		case 5:
			e = core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(core.ToolCompletedPayload{ToolID: pick(ids)})}
		case 6:
			e = core.NewEntry{Kind: core.KindApprovalRequested, Payload: core.Payload(core.ApprovalRequestedPayload{ApprovalID: pick(ids)})}
		case 7:
			e = core.NewEntry{Kind: core.KindApprovalResolved, Payload: core.Payload(core.ApprovalResolvedPayload{ApprovalID: pick(ids)})}
		case 8:
			status := pick([]string{"completed", "failed"})
			e = core.NewEntry{Kind: core.KindWorkerResult, Payload: core.Payload(core.WorkerResultPayload{Status: status,
				Decisions: []any{pick(words), 3, pick(words)}, FilesChanged: []string{pick(ids) + ".go"}})}
		case 9:
			e = core.NewEntry{Kind: core.KindArtifactCreated, Payload: core.Payload(core.ArtifactCreatedPayload{Path: pick(ids) + ".md"})}
		case 10:
			e = core.NewEntry{Kind: core.KindCompactionRequest, Payload: core.Payload(checkpoint.Request{Reason: checkpoint.ReasonManual, Attempt: r.Intn(2)})}
		case 11:
			e = core.NewEntry{Kind: core.KindCompactionFailed, Payload: core.Payload(core.CompactionFailedPayload{Reason: string(checkpoint.ReasonManual)})}
		case 12:
			cp := fmt.Sprintf("e_cp%d", r.Int63())
			e = core.NewEntry{ID: cp, Kind: core.KindCheckpoint, Payload: core.Payload(checkpoint.Checkpoint{Summary: "s",
				Decisions: []string{pick(words), pick(words)}})}
			ref := cp
			if r.Intn(5) == 0 {
				ref = "e_elsewhere"
			}
			out = append(out, e, core.NewEntry{Kind: core.KindCompaction, Payload: core.Payload(checkpoint.Boundary{CheckpointEntryID: ref})})
			e = core.NewEntry{Kind: core.KindBranchSummary, Payload: core.Payload(core.BranchSummaryPayload{Summary: "m"})}
		case 13:
			e = core.NewEntry{Kind: core.KindModelChanged, Payload: core.Payload(core.ModelChangedPayload{Model: pick([]string{"m1", "m2", ""})})}
		case 14:
			e = core.NewEntry{Kind: core.KindEffortChanged, Payload: core.Payload(core.EffortChangedPayload{Effort: pick([]string{"low", "high"})})}
		default:
			e = core.NewEntry{Kind: core.KindContextUsage, Payload: core.Payload(core.ContextUsagePayload{Used: int64(r.Intn(1000))}), TokenEstimate: int64(r.Intn(50))}
		}
		if e.TokenEstimate == 0 {
			e.TokenEstimate = int64(r.Intn(20))
		}
		out = append(out, e)
	}
	return out
}

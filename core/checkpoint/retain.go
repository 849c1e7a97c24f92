package checkpoint

import "github.com/bridge-dev/bridge/core"

// RetainPolicy says how much of the conversation before a checkpoint is
// kept verbatim after it. Both limits apply when both are set; zero means
// no limit from that field, and both zero keeps nothing.
type RetainPolicy struct {
	// KeepMessages keeps the last N user/assistant messages and everything
	// after the oldest of them.
	KeepMessages int
	// TokenBudget keeps at most this many tokens of entries (the stored
	// token estimate, else a quarter of the payload bytes).
	TokenBudget int64
}

// RetentionPlan is where the retained tail of a checkpoint starts.
type RetentionPlan struct {
	// FirstRetainedEntryID is the first entry kept ("" when nothing is
	// kept: the caller then uses a fresh id, which the branch.summary marker
	// carries, see CommitEntries).
	FirstRetainedEntryID string `json:"firstRetainedEntryId,omitempty"`
	// Index is its position on the branch (-1 when nothing is kept).
	Index int `json:"index"`
	// Entries, Messages and Tokens count what is kept (bookkeeping entries
	// excluded).
	Entries  int   `json:"entries"`
	Messages int   `json:"messages"`
	Tokens   int64 `json:"tokens"`
	// Widened is true when the cut was moved earlier so that a tool call
	// and its result stay together (the plan may then exceed the policy).
	Widened bool `json:"widened,omitempty"`
}

// PlanRetention picks firstRetainedEntryId for a checkpoint about to be
// committed on branch (root first): the oldest entry of the newest tail,
// after the last boundary, that fits p. Bookkeeping entries (compaction
// requests, checkpoints, markers, restorations, gauge readings) are never
// chosen and do not count. The cut never falls inside a tool pair: if a kept
// tool.completed has its tool.started before the cut, the cut moves earlier
// to that tool.started.
func PlanRetention(branch []core.Entry, p RetainPolicy) RetentionPlan {
	plan, _ := planRetention(branch, p)
	return plan
}

// PlanRetentionTail is PlanRetention on the newest entries of a branch
// (tail, oldest first; complete when nothing older is on the branch), for
// callers that do not read the whole branch. more says that older entries
// could change the plan: the tail holds no boundary, is not complete, and
// either all of it fits the policy or a kept tool.completed has no
// tool.started in it; read a longer tail then. Index counts within tail.
func PlanRetentionTail(tail []core.Entry, complete bool, p RetainPolicy) (plan RetentionPlan, more bool) {
	plan, open := planRetention(tail, p)
	return plan, open && !complete && LastBoundary(tail) < 0
}

// planRetention is PlanRetention; open says the plan reached the start of
// the entries after the last boundary without the policy stopping it, or
// left a kept tool.completed without its tool.started.
func planRetention(branch []core.Entry, p RetainPolicy) (RetentionPlan, bool) {
	plan := RetentionPlan{Index: -1}
	if p.KeepMessages <= 0 && p.TokenBudget <= 0 {
		return plan, false
	}
	lo := LastBoundary(branch) + 1
	cut := len(branch)
	var msgs int
	var tokens int64
	stopped := false
	for i := len(branch) - 1; i >= lo; i-- {
		e := branch[i]
		if bookkeepingKind(e.Kind) {
			continue
		}
		t := tokensOf(e)
		if (p.TokenBudget > 0 && tokens+t > p.TokenBudget) || (p.KeepMessages > 0 && msgs == p.KeepMessages) {
			stopped = true
			break
		}
		tokens += t
		if e.Kind.IsMessage() {
			msgs++
		}
		cut = i
	}
	if cut == len(branch) {
		return plan, !stopped
	}
	moved, open := keepToolPairsOpen(branch, lo, cut)
	if moved < cut {
		plan.Widened = true
		cut = moved
	}
	plan.Index = cut
	plan.FirstRetainedEntryID = branch[cut].ID
	plan.Tokens = 0
	for _, e := range branch[cut:] {
		if bookkeepingKind(e.Kind) {
			continue
		}
		plan.Entries++
		plan.Tokens += tokensOf(e)
		if e.Kind.IsMessage() {
			plan.Messages++
		}
	}
	return plan, open || !stopped
}

// keepToolPairs returns the cut (an index into entries, ≥ lo) moved earlier
// as far as needed so that no tool.completed at or after it has its
// tool.started before it. A tool.completed whose tool.started is not in
// entries[lo:] is left alone.
//
// It walks backwards from the end, so only the kept tail (and whatever the
// cut grows over) is decoded: need counts the kept completions still
// waiting for their start; below holds completions under the current cut,
// which become kept, and so needed, when the cut moves below them.
func keepToolPairs(entries []core.Entry, lo, cut int) int {
	cut, _ = keepToolPairsOpen(entries, lo, cut)
	return cut
}

// keepToolPairsOpen is keepToolPairs that also says whether a kept
// tool.completed found no tool.started in entries[lo:] (so that, on a tail
// of the branch, older entries may move the cut further).
func keepToolPairsOpen(entries []core.Entry, lo, cut int) (int, bool) {
	if cut <= lo || cut >= len(entries) {
		return cut, false
	}
	need := map[string]int{}
	needN := 0
	var below map[string]int
	for i := len(entries) - 1; i >= lo; i-- {
		if i < cut && needN == 0 {
			break
		}
		switch entries[i].Kind {
		case core.KindToolCompleted:
			id := toolID(entries[i].Payload)
			if i >= cut {
				need[id]++
				needN++
			} else {
				if below == nil {
					below = map[string]int{}
				}
				below[id]++
			}
		case core.KindToolStarted:
			id := toolID(entries[i].Payload)
			switch {
			case need[id] > 0:
				need[id]--
				needN--
				if i < cut {
					cut = i
					for bid, n := range below {
						need[bid] += n
						needN += n
					}
					clear(below)
				}
			case below[id] > 0:
				below[id]--
			}
		}
	}
	return cut, needN > 0
}

package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// splitAt reports whether cutting es at c leaves a kept tool.completed whose
// tool.started is dropped.
func splitAt(es []core.Entry, c int) bool {
	startIdx := map[string]int{}
	for i, e := range es {
		switch e.Kind {
		case core.KindToolStarted:
			startIdx[toolID(e.Payload)] = i
		case core.KindToolCompleted:
			if s, ok := startIdx[toolID(e.Payload)]; ok && i >= c && s < c {
				return true
			}
		}
	}
	return false
}

// TestKeepToolPairsIsTheLatestValidCut checks, on random interleavings of
// tool pairs (overlapping, nested, unfinished, orphaned) and messages, that
// the cut moves to the latest position that splits no pair.
func TestKeepToolPairsIsTheLatestValidCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 2000; round++ {
		b := newBranch()
		var open []string
		next := 0
		n := 5 + rng.IntN(40)
		for len(b.entries) < n {
			switch r := rng.IntN(10); {
			case r < 3:
				id := fmt.Sprintf("t%d", next)
				next++
				b.toolStart(id)
				open = append(open, id)
			case r < 6 && len(open) > 0:
				k := rng.IntN(len(open))
				b.toolDone(open[k])
				open = append(open[:k], open[k+1:]...)
			case r == 6:
				b.toolDone(fmt.Sprintf("orphan%d", round))
			default:
				b.user("m")
			}
		}
		es := b.entries
		cut := 1 + rng.IntN(len(es)-1)
		got := keepToolPairs(es, 0, cut)
		want := cut
		for want > 0 && splitAt(es, want) {
			want--
		}
		if got != want {
			t.Fatalf("round %d: cut %d moved to %d, want %d", round, cut, got, want)
		}
	}
}

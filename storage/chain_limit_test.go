package storage

import (
	"strconv"
	"strings"
	"testing"
)

// TestChainBatchClasses: the chain scan's LIMIT is one of a few literal
// size classes (a bound LIMIT makes SQLite compile the statement again on
// every page), never smaller than the batch asked for and at most 1024.
func TestChainBatchClasses(t *testing.T) {
	seen := map[string]bool{}
	for b := -1; b <= 2000; b++ {
		c := chainBatch(b)
		want := min(max(b, 1), 1024)
		if c < want || c > 1024 || c&(c-1) != 0 {
			t.Fatalf("chainBatch(%d) = %d", b, c)
		}
		q := chainSQL(c)
		if !strings.HasSuffix(q, " LIMIT "+strconv.Itoa(c)) || strings.Contains(q, "LIMIT ?") {
			t.Fatalf("chainSQL(%d) = %q", c, q)
		}
		seen[q] = true
	}
	if len(seen) > 7 {
		t.Errorf("%d distinct statements, want at most 7", len(seen))
	}
}

package core_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/bridge-dev/bridge/core"
)

// TestIDsSortByCreation: ids from one generator are unique under
// concurrent callers, increase strictly one after another (also within one
// millisecond), and carry the injected clock's time.
func TestIDsSortByCreation(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	g := core.NewIDs(func() time.Time { return at }, nil)
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				id := g.New("e_")
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
	// One after another: each is above the last, within one millisecond.
	ids = ids[:0]
	for range 2000 {
		ids = append(ids, g.New("e_"))
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("id %d %s is not above %s", i, ids[i], ids[i-1])
		}
	}
	u, err := ulid.ParseStrict(strings.TrimPrefix(ids[0], "e_"))
	if err != nil || !ulid.Time(u.Time()).Equal(at) {
		t.Fatalf("%s: %v, time %v, want %v", ids[0], err, ulid.Time(u.Time()), at)
	}
	// A later clock gives a later id.
	later := core.NewIDs(func() time.Time { return at.Add(time.Millisecond) }, bytes.NewReader(make([]byte, 64)))
	if id := later.New("e_"); id <= ids[len(ids)-1] {
		t.Fatalf("a later id %s sorts before %s", id, ids[len(ids)-1])
	}
}

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

// TestIDsAreULIDs: the random part and time read back through another
// ULID implementation exactly as they were drawn: an id is "e_", then the
// 26-character ULID of the clock's millisecond and the entropy's first 10
// bytes. The next id in the same millisecond adds 1 + the next 4 entropy
// bytes (big-endian) to the random part; a step that would overflow the
// 80 bits starts a fresh random part instead of wrapping or failing.
func TestIDsAreULIDs(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 123_456_789, time.UTC)
	clock := func() time.Time { return at }
	entropy := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0, 1, 0}
	g := core.NewIDs(clock, bytes.NewReader(entropy))
	parse := func(id string) ulid.ULID {
		t.Helper()
		u, err := ulid.ParseStrict(strings.TrimPrefix(id, "e_"))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return u
	}
	first := parse(g.New("e_"))
	if first.Time() != uint64(at.UnixMilli()) {
		t.Errorf("time %d, want %d", first.Time(), at.UnixMilli())
	}
	if e := first.Entropy(); !bytes.Equal(e, entropy[:10]) {
		t.Errorf("random part % x, want % x", e, entropy[:10])
	}
	second := parse(g.New("e_"))
	// 0x0102030405060708090A + (0x00000100 + 1) = 0x0102030405060708_0A0B
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 10, 11}
	if e := second.Entropy(); !bytes.Equal(e, want) {
		t.Errorf("second random part % x, want % x", e, want)
	}
	// At the top of the 80 bits, the next step starts afresh.
	top := append(bytes.Repeat([]byte{0xFF}, 10), 0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7)
	g = core.NewIDs(clock, bytes.NewReader(top))
	if e := parse(g.New("e_")).Entropy(); !bytes.Equal(e, top[:10]) {
		t.Fatalf("random part % x", e)
	}
	if e := parse(g.New("e_")).Entropy(); !bytes.Equal(e, top[14:24]) {
		t.Fatalf("after an overflowing step: random part % x, want a fresh % x", e, top[14:24])
	}
	// An entropy source that fails still gives valid, distinct ids.
	g = core.NewIDs(clock, bytes.NewReader(nil))
	if a, b := g.New("e_"), g.New("e_"); a == b || parse(a).Time() != uint64(at.UnixMilli()) {
		t.Fatalf("with failing entropy: %s %s", a, b)
	}
}

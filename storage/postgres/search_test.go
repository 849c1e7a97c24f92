package postgres_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// TestBroadSearchRanksTheNewestMatches: a query matching more entries than
// the store ranks (500, docs/postgres.md) ranks the newest of them, so an
// older, better match is not on its first page; a narrower query still
// finds that entry, and a cursor past the 500th hit still reads on.
func TestBroadSearchRanksTheNewestMatches(t *testing.T) {
	db := open(t)
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	es := []core.NewEntry{msg(core.KindUserMessage, "common common common oldest")}
	for i := 1; i < 600; i++ {
		es = append(es, msg(core.KindAssistantMessage, fmt.Sprintf("common filler %d", i)))
	}
	stored, err := db.Append(ctx, s.ID, es...)
	if err != nil {
		t.Fatal(err)
	}
	oldest := stored[0].ID
	page, err := db.Search(ctx, core.SearchQuery{Query: "common", Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Hits) != 20 || page.NextCursor == "" {
		t.Fatalf("broad query: %d hits, cursor %q; want a full page and more", len(page.Hits), page.NextCursor)
	}
	for _, h := range page.Hits {
		if h.Seq <= 100 {
			t.Fatalf("hit at seq %d: a broad query ranks its newest 500 matches (seq > 100)", h.Seq)
		}
	}
	narrow, err := db.Search(ctx, core.SearchQuery{Query: "common oldest"})
	if err != nil || len(narrow.Hits) != 1 || narrow.Hits[0].EntryID != oldest {
		t.Fatalf("narrow query: %+v %v, want the oldest entry", narrow.Hits, err)
	}
	deep, err := db.Search(ctx, core.SearchQuery{Query: "common", Limit: 20, Cursor: strconv.Itoa(580)})
	if err != nil || len(deep.Hits) != 20 || deep.NextCursor != "" {
		t.Fatalf("the last page of 600 matches: %d hits, cursor %q, %v; want 20 and no more", len(deep.Hits), deep.NextCursor, err)
	}
}

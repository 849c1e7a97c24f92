package storage_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// TestListLimitIsALiteralClass: a list page's statement binds no LIMIT (a
// bound LIMIT made SQLite compile the statement again on every page); its
// literal LIMIT is one of a few size classes that holds the page and one
// more row, and pages of sizes on either side of a class boundary still
// hold exactly their limit, with a cursor only when more sessions follow.
func TestListLimitIsALiteralClass(t *testing.T) {
	limitRE := regexp.MustCompile(`LIMIT (-?\d+)$`)
	classes := map[string]bool{}
	for limit := 1; limit <= 5000; limit++ {
		query, args, err := storage.ListSQL(core.ListQuery{}, limit)
		if err != nil {
			t.Fatal(err)
		}
		m := limitRE.FindStringSubmatch(query)
		if m == nil {
			t.Fatalf("limit %d: no literal LIMIT at the end of %q", limit, query)
		}
		if len(args) != 0 { // no filter, no cursor: nothing bound
			t.Fatalf("limit %d: args %v, want none", limit, args)
		}
		n, _ := strconv.Atoi(m[1])
		if n < limit+1 {
			t.Fatalf("limit %d: LIMIT %d cannot hold the page and the row after it", limit, n)
		}
		classes[m[1]] = true
	}
	if len(classes) > 10 {
		t.Fatalf("%d distinct LIMITs for pages of 1..5000: %v", len(classes), classes)
	}
	if q, _, _ := storage.ListSQL(core.ListQuery{}, 1<<40); !limitRE.MatchString(q) {
		t.Fatalf("a huge limit: %q", q)
	}

	ctx := context.Background()
	db := storagetest.Open(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const total = 70
	for i := 0; i < total; i++ {
		if _, err := db.CreateSession(ctx, core.Session{Harness: "codex", Cwd: "/w", UpdatedAt: base.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{1, 15, 16, 17, 31, 32, 33, 63, 64, 69, 70, 71, 1 << 30} {
		seen, cursor, pages := 0, "", 0
		for {
			page, next, err := db.ListSessions(ctx, core.ListQuery{Limit: limit, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if want := min(limit, total-seen); len(page) != want {
				t.Fatalf("limit %d, page %d: %d sessions, want %d", limit, pages, len(page), want)
			}
			seen += len(page)
			if (next != "") != (seen < total) {
				t.Fatalf("limit %d, page %d: cursor %q after %d of %d", limit, pages, next, seen, total)
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
}

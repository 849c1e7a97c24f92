package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestNarrowQueries: a query whose every match holds two words or more
// (words ANDed, a phrase, an AND of groups) is narrow and searched in one
// window; one word, an OR, a NOT or a prefix alone reads the newest rows
// first (searchSQL).
func TestNarrowQueries(t *testing.T) {
	for q, want := range map[string]bool{
		"quick fox":                true,
		`"brown fox"`:              true,
		"main.go":                  true,
		"fox AND brown":            true,
		"(lazy OR recipe) AND sun": true,
		"quick* fox":               true,
		"a NOT b AND c":            true,
		"quick":                    false,
		`"quick"`:                  false,
		"lazy OR recipe":           false,
		"lazy OR sun dog":          false,
		"sun dog OR lazy":          false,
		"brown NOT jumps":          false,
		"quick*":                   false,
		"(lazy OR recipe)":         false,
		"(sun dog) OR lazy":        false,
	} {
		tq, err := buildQuery(q)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if tq.narrow != want {
			t.Errorf("%q (%s): narrow %v, want %v", q, tq.match, tq.narrow, want)
		}
	}
}

// TestWindowsFindWhatOneWindowFinds: over 6,000 entries (three windows of
// rows for a first page), a broad query's pages are those of the same
// query read in one window: the same newest matches, ranked the same, a
// page past the 500th candidate included.
func TestWindowsFindWhatOneWindowFinds(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, pgtest.URL(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := db.CreateSession(ctx, core.Session{Harness: "codex"})
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 6; b++ {
		var es []core.NewEntry
		for i := b * 1000; i < (b+1)*1000; i++ {
			text := fmt.Sprintf("filler w%d", i)
			if i%3 == 0 {
				text += strings.Repeat(" alpha", i%5+1)
			}
			if i%11 == 0 {
				text += " beta"
			}
			es = append(es, core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(core.AssistantMessagePayload{Text: text})})
		}
		if _, err := db.Append(ctx, s.ID, es...); err != nil {
			t.Fatal(err)
		}
	}
	var top int64
	if err := db.pool.QueryRow(ctx, `SELECT max(rowid) FROM entries`).Scan(&top); err != nil {
		t.Fatal(err)
	}
	hits := func(q core.SearchQuery, tq tsQuery, limit, offset int) string {
		query, args := searchSQL(q, tq, limit, offset, top)
		rows, err := db.pool.Query(ctx, query, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			h, err := scanHit(rows, tq)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d:%.4f", h.Seq, h.Score))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, " ")
	}
	for _, text := range []string{"alpha", "beta", "alpha OR beta", "beta NOT alpha", "alp*", "w59*"} {
		q := core.SearchQuery{Query: text}
		tq, err := buildQuery(text)
		if err != nil || tq.narrow {
			t.Fatalf("%q: %v, narrow %v; want a broad query", text, err, tq.narrow)
		}
		one := tq
		one.narrow = true
		for _, offset := range []int{0, 490} {
			got, want := hits(q, tq, 20, offset), hits(q, one, 20, offset)
			if got != want || offset == 0 && want == "" {
				t.Errorf("%q from %d: windows found\n%s\none window\n%s", text, offset, got, want)
			}
		}
	}
}

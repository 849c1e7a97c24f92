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

// TestWindowsFindWhatOneWindowFinds: over 6,000 entries in two sessions,
// a broad query's pages are those of the same query read by one statement
// (as a narrow query is): the same newest matches, ranked the same, a page
// past the 500th candidate included, with a filter or not. They are read
// through the windows nextWindow chooses, and through small windows all
// read backwards, all through the GIN index, and alternating.
func TestWindowsFindWhatOneWindowFinds(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, pgtest.URL(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sessions []core.Session
	for _, h := range []string{"codex", "opencode"} {
		s, err := db.CreateSession(ctx, core.Session{Harness: h})
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
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
			if i%97 == 0 {
				text += " gamma"
			}
			es = append(es, core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(core.AssistantMessagePayload{Text: text})})
		}
		if _, err := db.Append(ctx, sessions[b/3].ID, es...); err != nil { // 0, 1, 2 to the first, 3, 4, 5 to the second
			t.Fatal(err)
		}
	}
	hits := func(q core.SearchQuery, tq tsQuery, limit, offset int) string {
		var out []string
		err := db.read(ctx, func(tx querier) error {
			hs, err := db.searchHits(ctx, tx, q, tq, limit, offset)
			for _, h := range hs {
				out = append(out, fmt.Sprintf("%d:%.4f", h.Seq, h.Score))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, " ")
	}
	chosen := nextWindow
	defer func() { nextWindow = chosen }()
	policies := map[string]func(n, found int, scanned, top int64, prefix bool) window{
		"chosen":     chosen,
		"backwards":  func(int, int, int64, int64, bool) window { return window{size: 700, read: backwards} },
		"gin window": func(int, int, int64, int64, bool) window { return window{size: 700, read: ginWindow} },
		"gin all":    func(int, int, int64, int64, bool) window { return window{size: 700, read: ginAll} },
		"alternating": func(_, _ int, scanned, _ int64, _ bool) window {
			return window{size: 900, read: reading(scanned / 900 % 3)}
		},
	}
	for name, policy := range policies {
		nextWindow = policy
		for _, text := range []string{"alpha", "beta", "gamma", "alpha OR beta", "beta NOT alpha", "alp*", "w59*", "nothing"} {
			tq, err := buildQuery(text)
			if err != nil || tq.narrow {
				t.Fatalf("%q: %v, narrow %v; want a broad query", text, err, tq.narrow)
			}
			one := tq
			one.narrow = true
			for _, q := range []core.SearchQuery{{Query: text}, {Query: text, Harness: "opencode"}} {
				for _, offset := range []int{0, 490} {
					got, want := hits(q, tq, 20, offset), hits(q, one, 20, offset)
					if got != want || offset == 0 && want == "" && text != "nothing" {
						t.Errorf("%s: %q (harness %q) from %d: windows found\n%s\none statement\n%s", name, text, q.Harness, offset, got, want)
					}
				}
			}
		}
	}
}

package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// oldListSQL is the list query before migration 6 (the OR cursor
// predicate), kept here as the baseline of BenchmarkListSessions.
const oldListSQL = `SELECT id, harness, cwd, title, preset, model, effort, native_session_id, head_id,
	restore_mode, latest_checkpoint_id, archived, created_at, updated_at FROM sessions WHERE archived = 0 AND (updated_at < ? OR (updated_at = ? AND id < ?))
	ORDER BY updated_at DESC, id DESC LIMIT ?`

// BenchmarkListSessions lists every session 100 a page, as `bridge
// sessions` does, with 100 and with 10,000 sessions; ns/session is the
// figure to compare. "or-cursor" pages the same rows with the predicate the
// list used before (a sort of every older session per page).
func BenchmarkListSessions(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{100, 10_000} {
		db := openBench(b)
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i < n; i++ {
			// Every tenth pair shares an updated_at: ties are paged by id.
			if _, err := db.CreateSession(ctx, core.Session{Harness: "claude-code", Cwd: "/w", Title: fmt.Sprint("session ", i),
				UpdatedAt: base.Add(time.Duration(i-i%2*(i%10/9)) * time.Millisecond)}); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("seek/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				got, cursor := 0, ""
				for {
					page, next, err := db.ListSessions(ctx, core.ListQuery{Cursor: cursor})
					if err != nil {
						b.Fatal(err)
					}
					got += len(page)
					if next == "" {
						break
					}
					cursor = next
				}
				if got != n {
					b.Fatalf("listed %d of %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/session")
		})
		b.Run(fmt.Sprintf("or-cursor/%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				got := 0
				upd, id := int64(1<<62), "~"
				for {
					rows, err := db.SQL().QueryContext(ctx, oldListSQL, upd, upd, id, 100)
					if err != nil {
						b.Fatal(err)
					}
					k := 0
					var s core.Session
					var archived bool
					var created int64
					for rows.Next() {
						if err := rows.Scan(&id, &s.Harness, &s.Cwd, &s.Title, &s.Preset, &s.Model, &s.Effort,
							&s.NativeSessionID, &s.HeadID, &s.RestoreMode, &s.LatestCheckpointID, &archived, &created, &upd); err != nil {
							b.Fatal(err)
						}
						k++
					}
					rows.Close()
					if k == 0 {
						break
					}
					got += k
				}
				if got != n {
					b.Fatalf("listed %d of %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/session")
		})
	}
}

// BenchmarkBranchedHistoryPage reads a 60-message page of a branched
// session of 120,000 entries (the active branch forks off near its root)
// at the head and 50,000 entries back. "walk" reads the same pages of an
// identical session without entry_links rows, which is the walk from the
// head that History did before migration 6.
func BenchmarkBranchedHistoryPage(b *testing.B) {
	ctx := context.Background()
	db := openBench(b)
	storage.DisableSearchIndex(db)
	pattern := []core.NewEntry{user("question"), tool("t1"),
		{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]string{"toolId": "t1"})},
		{Kind: core.KindContextUsage, Payload: core.Payload(map[string]int{"used": 1000})},
		assistant("answer")}
	chunk := make([]core.NewEntry, 0, 1000)
	for len(chunk) < cap(chunk) {
		chunk = append(chunk, pattern...)
	}
	build := func() (string, int64) {
		s := newSession(b, db)
		first, err := db.Append(ctx, s.ID, chunk...)
		if err != nil {
			b.Fatal(err)
		}
		// A branch under the tenth entry, then the session grows on it.
		if _, err := db.AppendTo(ctx, s.ID, first[9].ID, chunk...); err != nil {
			b.Fatal(err)
		}
		var last []core.Entry
		for n := 2000; n < 120_000; n += len(chunk) {
			if last, err = db.Append(ctx, s.ID, chunk...); err != nil {
				b.Fatal(err)
			}
		}
		return s.ID, last[len(last)-1].Seq
	}
	seek, headSeq := build()
	walk, _ := build()
	if _, err := db.SQL().ExecContext(ctx, `DELETE FROM entry_links WHERE session_id = ?`, walk); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, sid string
		before    int64
	}{{"seek/head", seek, 0}, {"seek/50000-back", seek, headSeq - 50_000},
		{"walk/head", walk, 0}, {"walk/50000-back", walk, headSeq - 50_000}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				page, _, err := db.History(ctx, c.sid, c.before, 60)
				if err != nil {
					b.Fatal(err)
				}
				if len(page) < 150 {
					b.Fatalf("page has %d entries, want 150", len(page))
				}
			}
		})
	}
}

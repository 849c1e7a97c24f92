package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// boundListSQL is the list page's statement before its archived value and
// LIMIT were written into its text (bound, each made SQLite compile the
// statement again on every page), kept as the baseline of
// BenchmarkListPageStatement.
const boundListSQL = `SELECT id, harness, cwd, title, preset, model, effort, native_session_id, head_id,
	restore_mode, latest_checkpoint_id, archived, last_status, created_at, updated_at FROM sessions
	WHERE archived = ? AND (updated_at, id) < (?, ?) ORDER BY updated_at DESC, id DESC LIMIT ?`

// literalListSQL is the same page with archived and LIMIT in the text (as
// listSQL writes it).
const literalListSQL = `SELECT id, harness, cwd, title, preset, model, effort, native_session_id, head_id,
	restore_mode, latest_checkpoint_id, archived, last_status, created_at, updated_at FROM sessions
	WHERE archived = 0 AND (updated_at, id) < (?, ?) ORDER BY updated_at DESC, id DESC LIMIT 128`

// BenchmarkListPageStatement lists 10,000 sessions 100 a page through the
// same code, in turn with the bound statement and with the literal one
// (each prepared once and run per page as database/sql runs it, on the
// same connection pool), one listing of each per iteration, and reports
// the medians per session listed and their ratio bound/literal. The
// statement is all that differs.
func BenchmarkListPageStatement(b *testing.B) {
	ctx := context.Background()
	db := openBench(b)
	storage.DisableSearchIndex(db)
	const n = 10_000
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err := db.Update(ctx, func(w core.Writer) error {
		for i := 0; i < n; i++ {
			if _, err := w.CreateSession(ctx, core.Session{Harness: "claude-code", Cwd: "/w", Title: fmt.Sprint("session ", i),
				UpdatedAt: base.Add(time.Duration(i) * time.Millisecond)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	list := func(query string, args func(upd int64, id string) []any) func() {
		stmt, err := db.SQL().PrepareContext(ctx, query)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { stmt.Close() })
		return func() {
			got := 0
			upd, id := int64(1<<62), "~"
			for {
				rows, err := stmt.QueryContext(ctx, args(upd, id)...)
				if err != nil {
					b.Fatal(err)
				}
				k := 0
				var s core.Session
				var created int64
				for k < 100 && rows.Next() {
					if err := rows.Scan(&id, &s.Harness, &s.Cwd, &s.Title, &s.Preset, &s.Model, &s.Effort, &s.NativeSessionID,
						&s.HeadID, &s.RestoreMode, &s.LatestCheckpointID, &s.Archived, &s.LastStatus, &created, &upd); err != nil {
						b.Fatal(err)
					}
					k++
				}
				rows.Close()
				got += k
				if k < 100 {
					break
				}
			}
			if got != n {
				b.Fatalf("listed %d of %d", got, n)
			}
		}
	}
	bound := list(boundListSQL, func(upd int64, id string) []any { return []any{false, upd, id, 101} })
	literal := list(literalListSQL, func(upd int64, id string) []any { return []any{upd, id} })
	bound()
	literal()
	var tb, tl []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		bound()
		t1 := time.Now()
		literal()
		tb = append(tb, float64(t1.Sub(t0).Nanoseconds())/n)
		tl = append(tl, float64(time.Since(t1).Nanoseconds())/n)
	}
	b.ReportMetric(medianF(tb), "ns/session-bound")
	b.ReportMetric(medianF(tl), "ns/session-literal")
	b.ReportMetric(medianF(tb)/medianF(tl), "bound/literal")
}

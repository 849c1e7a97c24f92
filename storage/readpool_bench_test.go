package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/storage"
)

// BenchmarkReadPool reads a 60-message page of a 1,000-entry session (the
// page session/history serves) and the session's row, in turn through the
// writer pool with read-only transactions (as before the read pool: the
// driver toggles PRAGMA query_only around each one, which expires the
// connection's prepared statements) and through the read pool, one of each
// per iteration. It reports the median time per page of each and the
// ratio writer/pool (above 1: the pool is faster).
func BenchmarkReadPool(b *testing.B) {
	ctx := context.Background()
	db := openBench(b)
	storage.DisableSearchIndex(db)
	s := newSession(b, db)
	chunk := turnEntries(1000)
	if _, err := db.Append(ctx, s.ID, chunk...); err != nil {
		b.Fatal(err)
	}
	read := func(viaWriter bool) float64 {
		storage.ReadThroughWriter(db, viaWriter)
		t0 := time.Now()
		page, _, err := db.History(ctx, s.ID, 0, 60)
		if err != nil || len(page) != 150 {
			b.Fatalf("page: %d entries, %v", len(page), err)
		}
		if _, err := db.GetSession(ctx, s.ID); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(t0).Nanoseconds())
	}
	read(true)
	read(false)
	var wr, pool []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wr = append(wr, read(true))
		pool = append(pool, read(false))
	}
	b.ReportMetric(medianF(wr), "ns/page-writer-tx")
	b.ReportMetric(medianF(pool), "ns/page-read-pool")
	b.ReportMetric(medianF(wr)/medianF(pool), "writer/pool")
}

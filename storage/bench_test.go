package storage_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

const ingestBatch = 100

func ingestEntries(n int) []core.NewEntry {
	es := make([]core.NewEntry, n)
	for i := range es {
		if i%2 == 0 {
			es[i] = user(fmt.Sprintf("message %d with a little text to make the payload realistic", i))
		} else {
			es[i] = assistant(fmt.Sprintf("answer %d with a little more text, as an assistant would write", i))
		}
		es[i].TokenEstimate = 17
	}
	return es
}

func openBench(b *testing.B) *storage.DB {
	b.Helper()
	db, err := storage.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkIngest compares appending batches through the store (ids,
// validation, seq, dedup checks, head move, group writer) with plain batched
// INSERTs of the same rows in one transaction on the same driver and schema.
// The search indexer follows the record on its own goroutine and file; in
// "store" the clock stops when the appends return (the spine's figure),
// in "store+index" when the index has caught up too, and "store-noindex"
// runs without the indexer.
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	store := func(b *testing.B, index, wait bool) {
		db := openBench(b)
		if !index {
			storage.DisableSearchIndex(db)
		}
		s := newSession(b, db)
		batch := ingestEntries(ingestBatch)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if _, err := db.Append(ctx, s.ID, batch...); err != nil {
				b.Fatal(err)
			}
		}
		if wait {
			if err := db.CatchUpSearch(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*ingestBatch)/time.Since(start).Seconds(), "entries/s")
	}
	b.Run("store", func(b *testing.B) { store(b, true, false) })
	b.Run("store+index", func(b *testing.B) { store(b, true, true) })
	b.Run("store-noindex", func(b *testing.B) { store(b, false, false) })
	b.Run("raw", func(b *testing.B) { rawIngest(b) })
}

// rawIngest is the baseline of BenchmarkIngest: plain batched INSERTs of
// the same rows in one transaction.
func rawIngest(b *testing.B) {
	ctx := context.Background()
	db := openBench(b)
	storage.DisableSearchIndex(db)
	s := newSession(b, db)
	batch := ingestEntries(ingestBatch)
	payloads := make([]string, len(batch))
	for i, e := range batch {
		payloads[i] = string(e.Payload)
	}
	sqlDB := db.SQL()
	seq := 0
	parent := ""
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		tx, err := sqlDB.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO entries
			(id, session_id, parent_id, seq, kind, payload, native_id, token_estimate, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		for j, e := range batch {
			seq++
			id := fmt.Sprintf("e_%026d", seq)
			var p any
			if parent != "" {
				p = parent
			}
			if _, err := stmt.ExecContext(ctx, id, s.ID, p, seq, string(e.Kind), payloads[j], nil,
				e.TokenEstimate, time.Now().UnixNano()); err != nil {
				b.Fatal(err)
			}
			parent = id
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*ingestBatch)/time.Since(start).Seconds(), "entries/s")
}

// BenchmarkHistoryPage100k reads one 60-message page of a 100,000-entry
// session with mixed kinds, from the head and from the middle.
func BenchmarkHistoryPage100k(b *testing.B) {
	ctx := context.Background()
	db := openBench(b)
	s := newSession(b, db)
	const total = 100_000
	pattern := []core.NewEntry{user("question"), tool("t1"),
		{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]string{"toolId": "t1"})},
		{Kind: core.KindContextUsage, Payload: core.Payload(map[string]int{"used": 1000})},
		assistant("answer")}
	chunk := make([]core.NewEntry, 0, 1000)
	for len(chunk) < cap(chunk) {
		chunk = append(chunk, pattern...)
	}
	for n := 0; n < total; n += len(chunk) {
		if _, err := db.Append(ctx, s.ID, chunk...); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		before int64
	}{{"head", 0}, {"middle", total / 2}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				page, _, err := db.History(ctx, s.ID, c.before, 60)
				if err != nil {
					b.Fatal(err)
				}
				if len(page) != 150 {
					b.Fatalf("page has %d entries, want 150", len(page))
				}
			}
		})
	}
}

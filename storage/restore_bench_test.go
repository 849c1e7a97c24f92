package storage_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/storage"
)

// BenchmarkRestoreThenWindow restores a dump of a 100,000-entry session
// (one chain, no boundary: its window summary covers every entry, the worst
// case) into a new database and reads its window summary once, as the
// controller does when the session is next used. Each iteration reports the
// restore's time, the first Window read's, and, on the same database with
// the summary row deleted, the read that has to rebuild it (what the first
// read cost when a restore wrote no summary). Run it on two trees to
// compare restores.
func BenchmarkRestoreThenWindow(b *testing.B) {
	ctx := context.Background()
	src := openBench(b)
	storage.DisableSearchIndex(src)
	s := newSession(b, src)
	chunk := turnEntries(1000)
	const total = 100_000
	for n := 0; n < total; n += len(chunk) {
		if _, err := src.Append(ctx, s.ID, chunk...); err != nil {
			b.Fatal(err)
		}
	}
	d, err := src.Dump(ctx, s.ID)
	if err != nil || len(d.Entries) != total {
		b.Fatalf("dump: %d entries, %v", len(d.Entries), err)
	}
	var restore, first, rebuilt []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dst, err := storage.Open(ctx, filepath.Join(b.TempDir(), "dst.db"), storage.Options{})
		if err != nil {
			b.Fatal(err)
		}
		storage.DisableSearchIndex(dst)
		b.StartTimer()
		t0 := time.Now()
		if _, err := dst.Restore(ctx, d); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		w, err := dst.Window(ctx, s.ID)
		if err != nil || w.Entries != total {
			b.Fatalf("window: %d entries, %v", w.Entries, err)
		}
		t2 := time.Now()
		if _, err := dst.SQL().ExecContext(ctx, `DELETE FROM session_windows WHERE session_id = ?`, s.ID); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if w, err := dst.Window(ctx, s.ID); err != nil || w.Entries != total {
			b.Fatalf("rebuilt window: %d entries, %v", w.Entries, err)
		}
		t4 := time.Now()
		restore = append(restore, float64(t1.Sub(t0).Nanoseconds()))
		first = append(first, float64(t2.Sub(t1).Nanoseconds()))
		rebuilt = append(rebuilt, float64(t4.Sub(t3).Nanoseconds()))
		b.StopTimer()
		dst.Close()
		b.StartTimer()
	}
	b.ReportMetric(medianF(restore), "ns/restore")
	b.ReportMetric(medianF(first), "ns/first-window")
	b.ReportMetric(medianF(rebuilt), "ns/rebuilt-window")
	b.ReportMetric(medianF(rebuilt)/medianF(first), "rebuilt/first")
}

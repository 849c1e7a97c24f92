package storage_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// ledgerOf1M is a record of 1,000,000 usage.reported entries: 1,000
// sessions of two harnesses, each reporting 1,000 turns over ten days of
// one year, on three models.
func ledgerOf1M(b *testing.B) *storage.DB {
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	{
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		cost := 0.002
		for s := 0; s < 1000; s++ {
			sess, err := db.CreateSession(ctx, core.Session{ID: fmt.Sprintf("s_%04d", s), Harness: []string{"claude-code", "codex"}[s%2], Cwd: "/p"})
			if err != nil {
				b.Fatal(err)
			}
			first := start.Add(time.Duration(s%355) * 24 * time.Hour)
			batch := make([]core.NewEntry, 0, 1000)
			for i := 0; i < 1000; i++ {
				at := first.Add(time.Duration(i) * 14 * time.Minute) // ten days
				u := core.Usage{Model: []string{"m-a", "m-b", "m-c"}[i%3], InputTokens: 1000, OutputTokens: 100,
					CacheReadTokens: 500, CacheWriteTokens: 50, At: &at, Scope: "turn"}
				if i%2 == 0 {
					u.CostUSD = &cost
				}
				batch = append(batch, u.Entry(""))
			}
			if _, err := db.Append(ctx, sess.ID, batch...); err != nil {
				b.Fatal(err)
			}
		}
	}
	return db
}

// BenchmarkUsageByDay: session/usage's store query grouped by day over
// 1,000,000 usage entries, the whole year (impl=index), against the scan
// it replaces: the same sums read from the entries themselves
// (impl=scan). It reports the 99th percentile of the calls' times.
//
//	go test ./storage -run '^$' -bench BenchmarkUsageByDay -benchtime 200x
func BenchmarkUsageByDay(b *testing.B) {
	db := ledgerOf1M(b)
	ctx := context.Background()
	run := func(b *testing.B, q func() (int, error)) {
		times := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			n, err := q()
			times = append(times, time.Since(t0))
			if err != nil || n < 350 {
				b.Fatalf("%d days, %v", n, err)
			}
		}
		b.StopTimer()
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.Run("impl=index", func(b *testing.B) {
		run(b, func() (int, error) {
			sums, err := db.Usage(ctx, core.UsageQuery{GroupBy: core.UsageByDay})
			return len(sums), err
		})
	})
	b.Run("impl=scan", func(b *testing.B) {
		run(b, func() (int, error) {
			rows, err := db.SQL().QueryContext(ctx, `SELECT unixepoch(json_extract(payload, '$.at')) / 86400,
				sum(json_extract(payload, '$.inputTokens')), sum(json_extract(payload, '$.outputTokens')),
				sum(json_extract(payload, '$.cacheReadTokens')), sum(json_extract(payload, '$.cacheWriteTokens')),
				sum(json_extract(payload, '$.costUsd'))
				FROM entries WHERE kind = 'usage.reported' GROUP BY 1`)
			if err != nil {
				return 0, err
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				n++
			}
			return n, rows.Err()
		})
	})
}

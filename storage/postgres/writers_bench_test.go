package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// BenchmarkWriters compares the aggregate append throughput of one writer
// with that of eight, each its own store (its own connection pool, as a
// process would have) appending batches of 100 entries to its own session
// of one database. b.N batches are shared among the writers; entries/s is
// the aggregate. The ratio eight/one is the figure (BENCHMARKS.md).
func BenchmarkWriters(b *testing.B) {
	ctx := context.Background()
	url := pgtest.URL(b)
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", n), func(b *testing.B) {
			dbs := make([]*postgres.DB, n)
			sids := make([]string, n)
			for i := range dbs {
				db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 2})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				s, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
				if err != nil {
					b.Fatal(err)
				}
				dbs[i], sids[i] = db, s.ID
			}
			batch := ingestEntries(ingestBatch)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range dbs {
				share := b.N / n
				if i < b.N%n {
					share++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range share {
						if _, err := dbs[i].Append(ctx, sids[i], batch...); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N*ingestBatch)/time.Since(start).Seconds(), "entries/s")
		})
	}
}

package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// corpus draws message text from a Zipf-distributed vocabulary of 20,000
// made-up words, as natural language is: a few words are everywhere, most
// are rare.
type corpus struct {
	words []string
	zipf  *rand.Zipf
	r     *rand.Rand
}

func newCorpus(seed uint64) *corpus {
	r := rand.New(rand.NewPCG(seed, 7))
	c := &corpus{r: r, zipf: rand.NewZipf(r, 1.07, 2, 19999)}
	syll := []string{"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "xe", "zu", "pra", "dre", "sto", "gli", "fen"}
	seen := map[string]bool{}
	for len(c.words) < 20000 {
		n := 2 + r.IntN(3)
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			c.words = append(c.words, w)
		}
	}
	return c
}

func (c *corpus) text(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.words[c.zipf.Uint64()]
	}
	return strings.Join(ws, " ")
}

// entries returns n messages of 10–60 words, every fifth a tool output.
func (c *corpus) entries(n int) []core.NewEntry {
	out := make([]core.NewEntry, n)
	for i := range out {
		t := c.text(10 + c.r.IntN(50))
		switch i % 5 {
		case 0:
			out[i] = user(t)
		case 4:
			out[i] = core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]string{"toolId": "t" + strconv.Itoa(i), "output": t})}
		default:
			out[i] = assistant(t)
		}
	}
	return out
}

// BenchmarkIngestSearchIndex compares importing batches of 1,000 entries
// (the import path: one Update per batch) with the search index against the
// same without it. With the index, the clock runs until the index covers
// every entry (CatchUpSearch), not only until the record has them.
func BenchmarkIngestSearchIndex(b *testing.B) {
	ctx := context.Background()
	c := newCorpus(1)
	batch := c.entries(1000)
	for _, indexed := range []bool{false, true} {
		name := "without-index"
		if indexed {
			name = "with-index"
		}
		b.Run(name, func(b *testing.B) {
			db := openBench(b)
			if !indexed {
				storage.DisableSearchIndex(db)
			}
			s := newSession(b, db)
			b.ResetTimer()
			start, cpu0 := time.Now(), processCPU()
			for i := 0; i < b.N; i++ {
				err := db.Update(ctx, func(w core.Writer) error {
					_, err := w.Append(ctx, s.ID, batch...)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			if indexed {
				if err := db.CatchUpSearch(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(batch))/time.Since(start).Seconds(), "entries/s")
			// CPU time of the process per entry, both goroutines: what the
			// ratio tends to on a machine with no core to spare.
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/1000/float64(b.N*len(batch)), "cpu-µs/entry")
		})
	}
}

// BenchmarkSearch1M searches a record of BRIDGE_BENCH_ENTRIES entries
// (default 1,000,000, in 100 sessions) with two-word queries of words drawn
// from ranks 50–5,000 of the vocabulary, and reports the p50 and p99 latency
// of a first page of 20 hits. The database is built once per process in
// BRIDGE_BENCH_DIR (default a temporary folder) and reused when it exists.
func BenchmarkSearch1M(b *testing.B) {
	ctx := context.Background()
	n := 1_000_000
	if v := os.Getenv("BRIDGE_BENCH_ENTRIES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	dir := os.Getenv("BRIDGE_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("search-%d.db", n))
	_, statErr := os.Stat(path)
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c := newCorpus(2)
	if statErr != nil {
		start := time.Now()
		const sessions = 100
		per := n / sessions
		for s := 0; s < sessions; s++ {
			sess, err := db.CreateSession(ctx, core.Session{Harness: []string{"claude-code", "codex", "opencode"}[s%3], Cwd: "/w"})
			if err != nil {
				b.Fatal(err)
			}
			for done := 0; done < per; done += 1000 {
				batch := c.entries(min(1000, per-done))
				if err := db.Update(ctx, func(w core.Writer) error {
					_, err := w.Append(ctx, sess.ID, batch...)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Logf("built %d entries in %v", n, time.Since(start))
	}
	// Search runs on a settled index: caught up and merged, as the indexer
	// leaves it once writing pauses (BRIDGE_BENCH_UNSETTLED=1 measures the
	// index as the build left it).
	if os.Getenv("BRIDGE_BENCH_UNSETTLED") == "" {
		start := time.Now()
		if err := db.SettleSearch(ctx); err != nil {
			b.Fatal(err)
		}
		b.Logf("index settled in %v", time.Since(start))
	}
	r := rand.New(rand.NewPCG(3, 4))
	queries := make([]string, 200)
	for i := range queries {
		queries[i] = c.words[50+r.IntN(4950)] + " " + c.words[50+r.IntN(4950)]
	}
	// Warm the page cache once.
	for _, q := range queries[:10] {
		if _, err := db.Search(ctx, core.SearchQuery{Query: q}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var lat, cpu []time.Duration
	hits := 0
	for i := 0; i < b.N; i++ {
		q := queries[i%len(queries)]
		t0, c0 := time.Now(), processCPU()
		p, err := db.Search(ctx, core.SearchQuery{Query: q})
		lat = append(lat, time.Since(t0))
		cpu = append(cpu, processCPU()-c0)
		if err != nil {
			b.Fatal(err)
		}
		hits += len(p.Hits)
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(lat, 0.50), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
	// CPU time of the process during each query: on a loaded machine the
	// wall-clock tail is mostly waiting for a core.
	b.ReportMetric(pct(cpu, 0.50), "p50-cpu-ms")
	b.ReportMetric(pct(cpu, 0.99), "p99-cpu-ms")
	b.ReportMetric(float64(hits)/float64(b.N), "hits/query")
}

// processCPU is the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

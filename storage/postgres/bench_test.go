package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// The benchmarks mirror storage's (SQLite's) of the same names, on a
// database of their own on the server pgtest names (BRIDGE_TEST_POSTGRES,
// or a temporary cluster): record them as ratios against the baseline
// measured in the same run (BENCHMARKS.md).

func msg(kind core.Kind, text string) core.NewEntry {
	return core.NewEntry{Kind: kind, Payload: core.Payload(map[string]string{"text": text})}
}

const ingestBatch = 100

func ingestEntries(n int) []core.NewEntry {
	es := make([]core.NewEntry, n)
	for i := range es {
		if i%2 == 0 {
			es[i] = msg(core.KindUserMessage, fmt.Sprintf("message %d with a little text to make the payload realistic", i))
		} else {
			es[i] = msg(core.KindAssistantMessage, fmt.Sprintf("answer %d with a little more text, as an assistant would write", i))
		}
		es[i].TokenEstimate = 17
	}
	return es
}

// BenchmarkIngest compares appending batches of 100 entries through the
// store (ids, validation, the session's row lock, seq, dedup checks, the
// search vector, head move, window summary: one transaction per batch)
// with raw batches of the same rows on the same server and schema: "raw-
// insert" one multi-row INSERT per transaction, "raw-copy" one COPY per
// transaction (neither writes a search vector).
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	b.Run("store", func(b *testing.B) {
		db := open(b)
		s, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
		if err != nil {
			b.Fatal(err)
		}
		batch := ingestEntries(ingestBatch)
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if _, err := db.Append(ctx, s.ID, batch...); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*ingestBatch)/time.Since(start).Seconds(), "entries/s")
	})
	raw := func(b *testing.B, copy bool) {
		db := open(b)
		s, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
		if err != nil {
			b.Fatal(err)
		}
		batch := ingestEntries(ingestBatch)
		seq, parent := 0, ""
		pool := db.Pool()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			rows := make([][]any, len(batch))
			for j, e := range batch {
				seq++
				id := fmt.Sprintf("e_%026d", seq)
				var p *string
				if parent != "" {
					p = &parent
				}
				rows[j] = []any{id, s.ID, p, int64(seq), string(e.Kind), string(e.Payload), nil, e.TokenEstimate, time.Now().UnixNano()}
				parent = id
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			cols := []string{"id", "session_id", "parent_id", "seq", "kind", "payload", "native_id", "token_estimate", "created_at"}
			if copy {
				_, err = tx.CopyFrom(ctx, pgx.Identifier{"entries"}, cols, pgx.CopyFromRows(rows))
			} else {
				var sb strings.Builder
				sb.WriteString("INSERT INTO entries (" + strings.Join(cols, ", ") + ") VALUES ")
				args := make([]any, 0, len(rows)*len(cols))
				for j, r := range rows {
					if j > 0 {
						sb.WriteString(", ")
					}
					sb.WriteString("(")
					for k := range r {
						if k > 0 {
							sb.WriteString(", ")
						}
						sb.WriteString("$" + strconv.Itoa(len(args)+1))
						args = append(args, r[k])
					}
					sb.WriteString(")")
				}
				_, err = tx.Exec(ctx, sb.String(), args...)
			}
			if err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*ingestBatch)/time.Since(start).Seconds(), "entries/s")
	}
	b.Run("raw-insert", func(b *testing.B) { raw(b, false) })
	b.Run("raw-copy", func(b *testing.B) { raw(b, true) })
	// paired: on a loaded machine the sub-benchmarks above run minutes
	// apart; here each iteration appends one batch through the store and
	// writes one raw batch (multi-row INSERT) and one COPY, on one
	// database, and the rates come from the same moments.
	b.Run("paired", func(b *testing.B) {
		db := open(b)
		s, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
		if err != nil {
			b.Fatal(err)
		}
		rawS, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
		if err != nil {
			b.Fatal(err)
		}
		batch := ingestEntries(ingestBatch)
		cols := []string{"id", "session_id", "parent_id", "seq", "kind", "payload", "native_id", "token_estimate", "created_at"}
		seq, parent := 0, ""
		rows := func() [][]any {
			out := make([][]any, len(batch))
			for j, e := range batch {
				seq++
				id := fmt.Sprintf("e_%026d", seq)
				var p *string
				if parent != "" {
					p = &parent
				}
				out[j] = []any{id, rawS.ID, p, int64(seq), string(e.Kind), string(e.Payload), nil, e.TokenEstimate, time.Now().UnixNano()}
				parent = id
			}
			return out
		}
		insertSQL := func(n int) string {
			var sb strings.Builder
			sb.WriteString("INSERT INTO entries (" + strings.Join(cols, ", ") + ") VALUES ")
			for j := range n {
				if j > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString("(")
				for k := range cols {
					if k > 0 {
						sb.WriteString(", ")
					}
					sb.WriteString("$" + strconv.Itoa(j*len(cols)+k+1))
				}
				sb.WriteString(")")
			}
			return sb.String()
		}(len(batch))
		var tStore, tInsert, tCopy time.Duration
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			if _, err := db.Append(ctx, s.ID, batch...); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			r := rows()
			args := make([]any, 0, len(r)*len(cols))
			for _, row := range r {
				args = append(args, row...)
			}
			tx, err := db.Pool().Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Exec(ctx, insertSQL, args...); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			r = rows()
			tx, err = db.Pool().Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"entries"}, cols, pgx.CopyFromRows(r)); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			t3 := time.Now()
			tStore, tInsert, tCopy = tStore+t1.Sub(t0), tInsert+t2.Sub(t1), tCopy+t3.Sub(t2)
		}
		n := float64(b.N * ingestBatch)
		b.ReportMetric(n/tStore.Seconds(), "store-entries/s")
		b.ReportMetric(n/tInsert.Seconds(), "insert-entries/s")
		b.ReportMetric(n/tCopy.Seconds(), "copy-entries/s")
		b.ReportMetric(tInsert.Seconds()/tStore.Seconds(), "store/insert")
		b.ReportMetric(tCopy.Seconds()/tStore.Seconds(), "store/copy")
	})
}

// BenchmarkHistoryPage100k reads one 60-message page of a 100,000-entry
// session with mixed kinds, from the head and from the middle, and
// ("middle-three-ways", in turn in each iteration) the backwards page from
// the middle, the forwards page from there (HistoryAfter) and the page
// around the entry there (HistoryAround), on PostgreSQL ("postgres/…") and on SQLite ("sqlite/…", the same session
// in storage's store), for the ratio.
func BenchmarkHistoryPage100k(b *testing.B) {
	ctx := context.Background()
	const total = 100_000
	pattern := []core.NewEntry{msg(core.KindUserMessage, "question"),
		{Kind: core.KindToolStarted, Payload: core.Payload(map[string]string{"toolId": "t1"})},
		{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]string{"toolId": "t1"})},
		{Kind: core.KindContextUsage, Payload: core.Payload(map[string]int{"used": 1000})},
		msg(core.KindAssistantMessage, "answer")}
	chunk := make([]core.NewEntry, 0, 1000)
	for len(chunk) < cap(chunk) {
		chunk = append(chunk, pattern...)
	}
	fill := func(b *testing.B, st core.Store) string {
		s, err := st.CreateSession(ctx, core.Session{Harness: "fake"})
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < total; n += len(chunk) {
			if _, err := st.Append(ctx, s.ID, chunk...); err != nil {
				b.Fatal(err)
			}
		}
		return s.ID
	}
	pg := open(b)
	pgSession := fill(b, pg)
	lite, err := storage.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer lite.Close()
	liteSession := fill(b, lite)
	for _, st := range []struct {
		name string
		st   core.Store
		sid  string
	}{{"postgres", pg, pgSession}, {"sqlite", lite, liteSession}} {
		for _, c := range []struct {
			name   string
			before int64
		}{{"head", 0}, {"middle", total / 2}} {
			b.Run(st.name+"/"+c.name, func(b *testing.B) {
				for range b.N {
					page, _, err := st.st.History(ctx, st.sid, c.before, 60)
					if err != nil {
						b.Fatal(err)
					}
					if len(page) != 150 {
						b.Fatalf("page has %d entries, want 150", len(page))
					}
				}
			})
		}
		// Forwards from the middle, and around the entry there (what
		// opening a search hit reads), against the backwards page from the
		// middle, in turn in each iteration: medians and their ratios.
		mid, _, err := st.st.History(ctx, st.sid, total/2+1, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(st.name+"/middle-three-ways", func(b *testing.B) {
			threeWays(b, st.st, st.sid, total/2, mid[len(mid)-1].ID)
		})
	}
}

// threeWays reads, in turn in each iteration, the 60-message backwards page
// before seq (History, the baseline), the forwards page after seq
// (HistoryAfter) and the page around entry aroundID (HistoryAround, what
// opening a search hit reads), and reports the medians and their ratios to
// the backwards page.
func threeWays(b *testing.B, st core.Store, sid string, seq int64, aroundID string) {
	ctx := context.Background()
	var back, after, around []float64
	timed := func(read func() (int, error)) float64 {
		t0 := time.Now()
		n, err := read()
		if err != nil {
			b.Fatal(err)
		}
		if n < 140 {
			b.Fatalf("page has %d entries, want about 150", n)
		}
		return float64(time.Since(t0).Nanoseconds())
	}
	for range b.N {
		back = append(back, timed(func() (int, error) {
			p, _, err := st.History(ctx, sid, seq, 60)
			return len(p), err
		}))
		after = append(after, timed(func() (int, error) {
			p, _, err := st.HistoryAfter(ctx, sid, seq, 60)
			return len(p), err
		}))
		around = append(around, timed(func() (int, error) {
			p, _, _, err := st.HistoryAround(ctx, sid, aroundID, 60)
			return len(p), err
		}))
	}
	med := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	mb, ma, mr := med(back), med(after), med(around)
	b.ReportMetric(mb, "ns/page-back")
	b.ReportMetric(ma, "ns/page-after")
	b.ReportMetric(mr, "ns/page-around")
	b.ReportMetric(ma/mb, "after/back")
	b.ReportMetric(mr/mb, "around/back")
}

// BenchmarkBranchedHistory100k is BenchmarkHistoryPage100k's three pages
// 50,000 entries back ("far"; "near": 1,000 back) on a PostgreSQL session
// of 100,000 whose active branch forks off at its tenth entry (storage's
// BenchmarkHistoryAround100k/branched shape): with no jump pointers every
// read walks from the head to the page, so run it with few iterations
// (-benchtime 10x).
func BenchmarkBranchedHistory100k(b *testing.B) {
	ctx := context.Background()
	pattern := []core.NewEntry{msg(core.KindUserMessage, "question"),
		{Kind: core.KindToolStarted, Payload: core.Payload(map[string]string{"toolId": "t1"})},
		{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]string{"toolId": "t1"})},
		{Kind: core.KindContextUsage, Payload: core.Payload(map[string]int{"used": 1000})},
		msg(core.KindAssistantMessage, "answer")}
	chunk := make([]core.NewEntry, 0, 1000)
	for len(chunk) < cap(chunk) {
		chunk = append(chunk, pattern...)
	}
	db := open(b)
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		b.Fatal(err)
	}
	first, err := db.Append(ctx, s.ID, chunk...)
	if err != nil {
		b.Fatal(err)
	}
	last, err := db.AppendTo(ctx, s.ID, first[9].ID, chunk...)
	if err != nil {
		b.Fatal(err)
	}
	for n := 2 * len(chunk); n < 100_000; n += len(chunk) {
		if last, err = db.Append(ctx, s.ID, chunk...); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		back int64
	}{{"far", 50_000}, {"near", 1_000}} {
		mid, _, err := db.History(ctx, s.ID, last[len(last)-1].Seq-c.back, 1)
		if err != nil {
			b.Fatal(err)
		}
		e := mid[len(mid)-1]
		b.Run(c.name, func(b *testing.B) { threeWays(b, db, s.ID, e.Seq, e.ID) })
	}
}

// corpus draws message text from a Zipf-distributed vocabulary of 20,000
// made-up words (storage's search benchmark's corpus).
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
		for range n {
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

func (c *corpus) entries(n int) []core.NewEntry {
	out := make([]core.NewEntry, n)
	for i := range out {
		t := c.text(10 + c.r.IntN(50))
		switch i % 5 {
		case 0:
			out[i] = msg(core.KindUserMessage, t)
		case 4:
			out[i] = core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]string{"toolId": "t" + strconv.Itoa(i), "output": t})}
		default:
			out[i] = msg(core.KindAssistantMessage, t)
		}
	}
	return out
}

// BenchmarkSearch measures search latency (p50, p99) over a record of
// BRIDGE_BENCH_ENTRIES entries (default 1,000,000) in 100 sessions, one
// sub-benchmark per documented query form ("words" is two words of
// middling frequency, as storage's BenchmarkSearch1M does; each query
// draws its words from ranks 50–5,000). BRIDGE_BENCH_POSTGRES names a
// database to keep the record in between runs (it is built when empty).
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	n := 1_000_000
	if v := os.Getenv("BRIDGE_BENCH_ENTRIES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	url := os.Getenv("BRIDGE_BENCH_POSTGRES")
	if url == "" {
		url = pgtest.URL(b)
	}
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c := newCorpus(2)
	var have int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM entries`).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == 0 {
		start := time.Now()
		const sessions = 100
		per := n / sessions
		for s := range sessions {
			sess, err := db.CreateSession(ctx, core.Session{Harness: []string{"claude-code", "codex", "opencode"}[s%3], Cwd: "/w"})
			if err != nil {
				b.Fatal(err)
			}
			for done := 0; done < per; done += 1000 {
				if _, err := db.Append(ctx, sess.ID, c.entries(min(1000, per-done))...); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := db.Pool().Exec(ctx, `VACUUM ANALYZE entries`); err != nil {
			b.Fatal(err)
		}
		b.Logf("built %d entries in %v", n, time.Since(start))
	} else {
		b.Logf("searching the %d entries already in the database", have)
	}
	r := rand.New(rand.NewPCG(3, 4))
	word := func() string { return c.words[50+r.IntN(4950)] }
	forms := []struct {
		name  string
		query func() string
	}{
		{"words", func() string { return word() + " " + word() }},
		{"phrase", func() string { return `"` + word() + " " + word() + `"` }},
		{"or", func() string { return word() + " OR " + word() }},
		{"not", func() string { return word() + " NOT " + word() }},
		{"prefix", func() string { w := word(); return w[:len(w)-2] + "*" }},
		{"grouped", func() string { return "(" + word() + " OR " + word() + ") AND " + word() }},
		{"punctuated", func() string { return word() + "." + word() }},
	}
	for _, f := range forms {
		queries := make([]string, 200)
		for i := range queries {
			queries[i] = f.query()
		}
		b.Run(f.name, func(b *testing.B) {
			for _, q := range queries[:10] { // warm the cache once
				if _, err := db.Search(ctx, core.SearchQuery{Query: q}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			var lat []time.Duration
			hits := 0
			for i := range b.N {
				q := queries[i%len(queries)]
				t0 := time.Now()
				p, err := db.Search(ctx, core.SearchQuery{Query: q})
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatalf("%s: %v", q, err)
				}
				hits += len(p.Hits)
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(hits)/float64(b.N), "hits/query")
		})
	}
}

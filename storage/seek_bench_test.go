package storage_test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
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
// sessions` does, from a record of 100 and one of 10,000 sessions. Each
// iteration lists the small record 100 times and the large one once (the
// same 10,000 sessions listed, so both see the same machine), with the
// query of the list ("seek") and with the predicate it used before
// ("or-cursor", which scanned every newer session for each page). It
// reports the medians of wall and CPU time per session listed and the
// ratio 10,000 / 100 (goal ≤ 1.5×).
func BenchmarkListSessions(b *testing.B) {
	ctx := context.Background()
	dbs := map[int]*storage.DB{}
	for _, n := range []int{100, 10_000} {
		db := openBench(b)
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		err := db.Update(ctx, func(w core.Writer) error {
			for i := 0; i < n; i++ {
				// Every tenth pair shares an updated_at: ties are paged by id.
				if _, err := w.CreateSession(ctx, core.Session{Harness: "claude-code", Cwd: "/w", Title: fmt.Sprint("session ", i),
					UpdatedAt: base.Add(time.Duration(i-i%2*(i%10/9)) * time.Millisecond)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		dbs[n] = db
	}
	seek := func(db *storage.DB, n int) {
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
	orCursor := func(db *storage.DB, n int) {
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
	for _, q := range []struct {
		name string
		list func(*storage.DB, int)
	}{{"seek", seek}, {"or-cursor", orCursor}} {
		b.Run(q.name, func(b *testing.B) {
			wall := map[int][]float64{}
			cpu := map[int][]float64{}
			for i := 0; i < b.N; i++ {
				for _, n := range []int{100, 10_000} {
					c0, t0 := cpuTime(), time.Now()
					for range 10_000 / n {
						q.list(dbs[n], n)
					}
					wall[n] = append(wall[n], float64(time.Since(t0).Nanoseconds())/10_000)
					cpu[n] = append(cpu[n], float64((cpuTime()-c0).Nanoseconds())/10_000)
				}
			}
			b.ReportMetric(medianF(wall[100]), "ns/session-100")
			b.ReportMetric(medianF(wall[10_000]), "ns/session-10000")
			b.ReportMetric(medianF(wall[10_000])/medianF(wall[100]), "10000/100")
			b.ReportMetric(medianF(cpu[10_000])/medianF(cpu[100]), "cpu-10000/100")
		})
	}
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func medianF(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkBranchedHistoryPage reads a 60-message page of a branched
// session of 120,000 entries (the active branch forks off near its root)
// at the head and 50,000 entries back, in turn in each iteration, and
// reports the medians and their ratio (goal ≤ 1.5×). "walk" reads the same
// pages of an identical session without entry_links rows, which is the
// walk from the head that History did before migration 6.
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
	for _, c := range []struct{ name, sid string }{{"seek", seek}, {"walk", walk}} {
		b.Run(c.name, func(b *testing.B) {
			var head, back []float64
			page := func(before int64) float64 {
				t0 := time.Now()
				p, _, err := db.History(ctx, c.sid, before, 60)
				if err != nil {
					b.Fatal(err)
				}
				if len(p) < 150 {
					b.Fatalf("page has %d entries, want 150", len(p))
				}
				return float64(time.Since(t0).Nanoseconds())
			}
			for i := 0; i < b.N; i++ {
				head = append(head, page(0))
				back = append(back, page(headSeq-50_000))
			}
			b.ReportMetric(medianF(head), "ns/page-head")
			b.ReportMetric(medianF(back), "ns/page-50000-back")
			b.ReportMetric(medianF(back)/medianF(head), "back/head")
		})
	}
}

// BenchmarkHistoryAround100k reads 60-message pages 50,000 entries back
// in a session of 100,000 entries three ways, in turn in each iteration:
// the backwards page before that seq (History, the baseline), the forwards
// page after it (HistoryAfter) and the page around the entry there
// (HistoryAround, what opening a search hit reads). It reports the medians
// and the ratios to the backwards page, on a session that never branched
// ("chain") and on one whose active branch forks off near its root and so
// reads by entry_links ("branched", as BenchmarkBranchedHistoryPage's).
func BenchmarkHistoryAround100k(b *testing.B) {
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
	build := func(branched bool) (string, core.Entry) {
		s := newSession(b, db)
		var last []core.Entry
		first, err := db.Append(ctx, s.ID, chunk...)
		if err != nil {
			b.Fatal(err)
		}
		if branched { // a branch under the tenth entry, then the session grows on it
			if last, err = db.AppendTo(ctx, s.ID, first[9].ID, chunk...); err != nil {
				b.Fatal(err)
			}
		}
		for n := len(chunk); n < 100_000; n += len(chunk) {
			if last, err = db.Append(ctx, s.ID, chunk...); err != nil {
				b.Fatal(err)
			}
		}
		p, _, err := db.History(ctx, s.ID, last[len(last)-1].Seq-50_000, 1)
		if err != nil {
			b.Fatal(err)
		}
		return s.ID, p[len(p)-1]
	}
	for _, branched := range []bool{false, true} {
		sid, mid := build(branched)
		name := map[bool]string{false: "chain", true: "branched"}[branched]
		b.Run(name, func(b *testing.B) {
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
			for i := 0; i < b.N; i++ {
				back = append(back, timed(func() (int, error) {
					p, _, err := db.History(ctx, sid, mid.Seq, 60)
					return len(p), err
				}))
				after = append(after, timed(func() (int, error) {
					p, _, err := db.HistoryAfter(ctx, sid, mid.Seq, 60)
					return len(p), err
				}))
				around = append(around, timed(func() (int, error) {
					p, _, _, err := db.HistoryAround(ctx, sid, mid.ID, 60)
					return len(p), err
				}))
			}
			b.ReportMetric(medianF(back), "ns/page-back")
			b.ReportMetric(medianF(after), "ns/page-after")
			b.ReportMetric(medianF(around), "ns/page-around")
			b.ReportMetric(medianF(after)/medianF(back), "after/back")
			b.ReportMetric(medianF(around)/medianF(back), "around/back")
		})
	}
}

// BenchmarkAppendLinks measures what entry_links rows cost an append:
// batches of 100 entries and single entries appended at the head of a
// session that never branched (no rows: its entries are one chain) and of
// one that branched (a row per entry), with the rows and without them
// (DisableLinks), in turn in every iteration (search indexing off in both).
// It reports the medians and their ratio.
func BenchmarkAppendLinks(b *testing.B) {
	ctx := context.Background()
	for _, branched := range []bool{false, true} {
		for _, size := range []int{100, 1} {
			b.Run(fmt.Sprintf("branched=%v/batch-%d", branched, size), func(b *testing.B) {
				with, without := openBench(b), openBench(b)
				storage.DisableSearchIndex(with)
				storage.DisableSearchIndex(without)
				storage.DisableLinks(without)
				sw, so := newSession(b, with), newSession(b, without)
				if branched {
					for _, c := range []struct {
						db  *storage.DB
						sid string
					}{{with, sw.ID}, {without, so.ID}} {
						es := mustAppend(b, c.db, c.sid, user("u"), assistant("a"))
						if _, err := c.db.AppendTo(ctx, c.sid, es[0].ID, assistant("a'")); err != nil {
							b.Fatal(err)
						}
					}
				}
				batch := ingestEntries(size)
				var tw, to []float64
				for i := 0; i < b.N; i++ {
					for _, c := range []struct {
						db  *storage.DB
						sid string
						out *[]float64
					}{{with, sw.ID, &tw}, {without, so.ID, &to}} {
						t0 := time.Now()
						for range 100 / size {
							if _, err := c.db.Append(ctx, c.sid, batch...); err != nil {
								b.Fatal(err)
							}
						}
						*c.out = append(*c.out, float64(time.Since(t0).Nanoseconds())/100)
					}
				}
				b.ReportMetric(medianF(tw), "ns/entry-links")
				b.ReportMetric(medianF(to), "ns/entry-none")
				b.ReportMetric(medianF(tw)/medianF(to), "links/none")
			})
		}
	}
}

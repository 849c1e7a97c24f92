package postgres_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage"
)

// fillSession records a session with a branch, audit records, usage and
// random entries of every kind the window reads.
func fillSession(t *testing.T, st core.Store) core.Session {
	t.Helper()
	s, err := st.CreateSession(ctx, core.Session{Harness: "codex", Cwd: "/w", Title: "a title", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(7))
	main := storetest.MustAppend(t, st, s.ID, storetest.RandomEntries(r, 40)...)
	if _, err := st.AppendTo(ctx, s.ID, main[10].ID, storetest.RandomEntries(r, 5)...); err != nil {
		t.Fatal(err)
	}
	cost := 0.25
	at := time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)
	storetest.MustAppend(t, st, s.ID, core.Usage{Model: "m1", InputTokens: 10, OutputTokens: 5, CostUSD: &cost, At: &at}.Entry("u1"),
		core.Usage{Model: "m2", InputTokens: 7, CacheReadTokens: 3}.Entry("u2"))
	for i := range 3 {
		if err := st.AppendAudit(ctx, core.AuditRecord{Source: "t", Kind: "k", Entity: s.ID, Body: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func dumpJSON(t *testing.T, d core.Dumper, id string) string {
	t.Helper()
	dump, err := d.Dump(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(dump)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDumpRoundTripsThroughBothStores: a session dumped from PostgreSQL,
// restored into SQLite, dumped there and restored into a second
// PostgreSQL database dumps byte for byte as it began; the restored
// session's window and branch are what they were; restoring it again adds
// nothing.
func TestDumpRoundTripsThroughBothStores(t *testing.T) {
	pg := open(t)
	s := fillSession(t, pg)
	first := dumpJSON(t, pg, s.ID)
	var d core.SessionDump
	if err := json.Unmarshal([]byte(first), &d); err != nil {
		t.Fatal(err)
	}
	lite, err := storage.Open(ctx, filepath.Join(t.TempDir(), "bridge.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if n, err := lite.Restore(ctx, d); err != nil || n != len(d.Entries) {
		t.Fatalf("restore into SQLite: %d, %v", n, err)
	}
	if got := dumpJSON(t, lite, s.ID); got != first {
		t.Fatalf("SQLite's dump differs:\n%s\n%s", got, first)
	}
	pg2 := open(t)
	if err := json.Unmarshal([]byte(dumpJSON(t, lite, s.ID)), &d); err != nil {
		t.Fatal(err)
	}
	if n, err := pg2.Restore(ctx, d); err != nil || n != len(d.Entries) {
		t.Fatalf("restore into PostgreSQL: %d, %v", n, err)
	}
	if got := dumpJSON(t, pg2, s.ID); got != first {
		t.Fatalf("the second PostgreSQL's dump differs:\n%s\n%s", got, first)
	}
	if n, err := pg2.Restore(ctx, d); err != nil || n != 0 {
		t.Fatalf("restoring again added %d entries, %v", n, err)
	}
	br, err := pg2.ActiveBranch(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	win, err := pg2.Window(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, win), mustJSON(t, checkpoint.WindowOf(br)); g != w {
		t.Fatalf("window after restore\n got %s\nwant %s", g, w)
	}
	// An entry id another session holds is a conflict, and nothing of the
	// restore stays.
	other := d
	other.Session.ID = "s_other"
	for i := range other.Entries {
		other.Entries[i].SessionID = "s_other"
	}
	if _, err := pg2.Restore(ctx, other); core.ErrorCode(err) != core.CodeConflict {
		t.Fatalf("restore of taken entry ids: %v, want conflict", err)
	}
	if _, err := pg2.GetSession(ctx, "s_other"); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("a failed restore left its session: %v", err)
	}
}

// TestUsageSumsAsSQLiteDoes: the same usage entries give the same sums on
// both stores, by every grouping and over a range that cuts a day.
func TestUsageSumsAsSQLiteDoes(t *testing.T) {
	pg := open(t)
	lite, err := storage.Open(ctx, filepath.Join(t.TempDir(), "bridge.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	day := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for _, st := range []core.Store{pg, lite} {
		for i, h := range []string{"codex", "claude-code"} {
			s, err := st.CreateSession(ctx, core.Session{ID: fmt.Sprintf("s_%d", i), Harness: h})
			if err != nil {
				t.Fatal(err)
			}
			var es []core.NewEntry
			for k := range 12 {
				at := day.Add(time.Duration(k*7) * time.Hour)
				u := core.Usage{Model: []string{"m1", "m2"}[k%2], InputTokens: int64(100 + k), OutputTokens: int64(10 * k),
					CacheReadTokens: int64(k), CacheWriteTokens: 1, At: &at}
				if k%3 != 0 {
					c := float64(k) / 8
					u.CostUSD, u.CostEstimated = &c, k%3 == 2
				}
				es = append(es, u.Entry(fmt.Sprintf("u%d", k)))
			}
			if _, err := st.Append(ctx, s.ID, es...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []core.UsageQuery{
		{GroupBy: core.UsageByDay}, {GroupBy: core.UsageByModel}, {GroupBy: core.UsageByHarness}, {GroupBy: core.UsageBySession},
		{GroupBy: core.UsageByDay, SessionID: "s_1"},
		{GroupBy: core.UsageByModel, Since: day.Add(5 * time.Hour), Until: day.Add(50 * time.Hour)},
	} {
		want, err := lite.Usage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pg.Usage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
			t.Errorf("%+v:\npostgres %s\nsqlite   %s", q, g, w)
		}
	}
	if _, err := pg.Usage(ctx, core.UsageQuery{GroupBy: "week"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("unknown grouping: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

package storage_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// TestUsageLedger: the ledger's sums, whole days from the daily rows and
// cut days from single reports, equal the sums of the reports themselves,
// for every grouping, with and without a session and a time range; a
// report without a time counts when it was recorded; an entry of another
// kind, or a payload the index cannot read, adds nothing.
func TestUsageLedger(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	a, err := db.CreateSession(ctx, core.Session{ID: "s_a", Harness: "claude-code", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.CreateSession(ctx, core.Session{ID: "s_b", Harness: "codex", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	type rep struct {
		sid string
		u   core.Usage
	}
	cost := func(c float64) *float64 { return &c }
	var reps []rep
	for i := 0; i < 60; i++ {
		at := day.Add(time.Duration(i) * 97 * time.Minute) // about four days
		u := core.Usage{Model: []string{"m1", "m2"}[i%2], InputTokens: int64(100 + i), OutputTokens: int64(10 + i),
			CacheReadTokens: int64(i), CacheWriteTokens: int64(2 * i), At: &at, Scope: "turn"}
		sid := a.ID
		switch i % 3 {
		case 0:
			u.CostUSD = cost(0.01 * float64(i))
		case 1:
			u.CostUSD, u.CostEstimated = cost(0.001*float64(i)), true
			sid = b.ID
		}
		reps = append(reps, rep{sid, u})
	}
	for _, r := range reps {
		if _, err := db.Append(ctx, r.sid, r.u.Entry("")); err != nil {
			t.Fatal(err)
		}
	}
	// Recorded now, without a time of its own; and entries that add nothing.
	now := core.Usage{Model: "m1", InputTokens: 7, OutputTokens: 3}
	if _, err := db.Append(ctx, a.ID, now.Entry(""),
		core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(map[string]any{"text": "x", "inputTokens": 5})}); err != nil {
		t.Fatal(err)
	}
	recorded := time.Now().UTC()
	nowAt := recorded
	now.At = &nowAt
	reps = append(reps, rep{a.ID, now})

	check := func(q core.UsageQuery) {
		t.Helper()
		got, err := db.Usage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]core.UsageSum{}
		for _, r := range reps {
			at := *r.u.At
			if (q.SessionID != "" && r.sid != q.SessionID) || (!q.Since.IsZero() && at.Before(q.Since)) || (!q.Until.IsZero() && !at.Before(q.Until)) {
				continue
			}
			harness := map[string]string{a.ID: "claude-code", b.ID: "codex"}[r.sid]
			key := map[core.UsageGroupBy]string{core.UsageBySession: r.sid, core.UsageByHarness: harness,
				core.UsageByModel: r.u.Model, core.UsageByDay: at.Format(time.DateOnly)}[q.GroupBy]
			s := want[key]
			s.Key = key
			s.Reports++
			s.InputTokens += r.u.InputTokens
			s.OutputTokens += r.u.OutputTokens
			s.CacheReadTokens += r.u.CacheReadTokens
			s.CacheWriteTokens += r.u.CacheWriteTokens
			if r.u.CostUSD == nil {
				s.Unpriced++
			} else {
				s.CostUSD += *r.u.CostUSD
				if r.u.CostEstimated {
					s.EstimatedUSD += *r.u.CostUSD
				}
			}
			want[key] = s
		}
		if len(got) != len(want) {
			t.Fatalf("%+v: %d groups %+v, want %d %+v", q, len(got), got, len(want), want)
		}
		for _, g := range got {
			w := want[g.Key]
			if g.Reports != w.Reports || g.InputTokens != w.InputTokens || g.OutputTokens != w.OutputTokens ||
				g.CacheReadTokens != w.CacheReadTokens || g.CacheWriteTokens != w.CacheWriteTokens || g.Unpriced != w.Unpriced ||
				math.Abs(g.CostUSD-w.CostUSD) > 1e-9 || math.Abs(g.EstimatedUSD-w.EstimatedUSD) > 1e-9 {
				t.Errorf("%+v group %s: got %+v, want %+v", q, g.Key, g, w)
			}
			if q.GroupBy == core.UsageBySession && g.Harness == "" {
				t.Errorf("group %s names no harness", g.Key)
			}
		}
	}
	for _, by := range []core.UsageGroupBy{core.UsageBySession, core.UsageByHarness, core.UsageByModel, core.UsageByDay} {
		check(core.UsageQuery{GroupBy: by})
		check(core.UsageQuery{GroupBy: by, SessionID: b.ID})
		// Cut days at both ends, whole days between.
		check(core.UsageQuery{GroupBy: by, Since: day.Add(5*time.Hour + 3*time.Minute), Until: day.Add(70 * time.Hour)})
		// Within one day; from midnight to midnight; open at one end.
		check(core.UsageQuery{GroupBy: by, Since: day.Add(26 * time.Hour), Until: day.Add(30 * time.Hour)})
		check(core.UsageQuery{GroupBy: by, Since: day.Add(24 * time.Hour), Until: day.Add(72 * time.Hour)})
		check(core.UsageQuery{GroupBy: by, Since: day.Add(50 * time.Hour)})
		check(core.UsageQuery{GroupBy: by, Until: day.Add(50*time.Hour + time.Minute), SessionID: a.ID})
		check(core.UsageQuery{GroupBy: by, Since: recorded.Add(-time.Hour)})
	}
	if _, err := db.Usage(ctx, core.UsageQuery{GroupBy: "week"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("grouping by week: %v, want invalid", err)
	}
}

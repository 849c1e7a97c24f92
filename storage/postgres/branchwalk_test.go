package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestBranchWalkReadsTheGoWalkersPages: on a session whose active branch
// forks three times (other branches' entries between its seqs), every
// backwards page (History before each seq, from the head and past it), every
// forwards page (HistoryAfter each seq, from 0 to past the head) and the
// page around every entry (on the branch, off it, of another session), at
// page sizes 2 and 13 messages, are what the Go walker alone reads: the same
// entries, the same hasMore/hasNewer, the same errors. The walk inside
// the server must also be the one that found them (branchWalk ok), by
// runs of consecutive seqs.
func TestBranchWalkReadsTheGoWalkersPages(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, pgtest.URL(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	kinds := []core.Kind{core.KindUserMessage, core.KindToolStarted, core.KindToolCompleted, core.KindContextUsage,
		core.KindAssistantMessage, core.KindAssistantMessage}
	n := 0
	entries := func(k int) []core.NewEntry {
		out := make([]core.NewEntry, k)
		for i := range out {
			out[i] = core.NewEntry{Kind: kinds[n%len(kinds)], Payload: core.Payload(map[string]any{"text": fmt.Sprint("e", n), "toolId": fmt.Sprint("t", n/6), "used": 1000})}
			n++
		}
		return out
	}
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := db.Append(ctx, s.ID, entries(20)...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.AppendTo(ctx, s.ID, a[4].ID, entries(30)...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendTo(ctx, s.ID, a[15].ID, entries(10)...); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, s.ID, entries(25)...); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendTo(ctx, s.ID, b[20].ID, entries(40)...); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, s.ID, entries(15)...); err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := db.Append(ctx, other.ID, entries(3)...)
	if err != nil {
		t.Fatal(err)
	}
	branch, err := db.ActiveBranch(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(branch) != 5+21+40+15 {
		t.Fatalf("the active branch has %d entries, want %d", len(branch), 5+21+40+15)
	}
	head := branch[len(branch)-1]
	var all []core.Entry
	for seq := int64(1); seq <= head.Seq; seq++ {
		var id string
		if err := db.pool.QueryRow(ctx, `SELECT id FROM entries WHERE session_id = $1 AND seq = $2`, s.ID, seq).Scan(&id); err != nil {
			t.Fatal(err)
		}
		e, err := db.GetEntry(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}

	// both reads the page the new way and by the Go walker alone.
	both := func(read func() string) (string, string) {
		db.walkInGo = false
		got := read()
		db.walkInGo = true
		want := read()
		db.walkInGo = false
		return got, want
	}
	page := func(es []core.Entry, flags ...bool) string {
		ids := make([]string, len(es))
		for i, e := range es {
			ids[i] = fmt.Sprint(e.Seq, e.ID, e.Kind)
		}
		return fmt.Sprint(strings.Join(ids, " "), flags)
	}
	fail := func(err error) string { return fmt.Sprintf("error %s: %v", core.ErrorCode(err), err) }
	pages := 0
	for _, max := range []int{2, 13} {
		for seq := int64(0); seq <= head.Seq+2; seq++ {
			got, want := both(func() string {
				es, more, err := db.History(ctx, s.ID, seq, max)
				if err != nil {
					return fail(err)
				}
				return page(es, more)
			})
			if got != want {
				t.Fatalf("History before %d, %d messages:\n got %s\nwant %s", seq, max, got, want)
			}
			got, want = both(func() string {
				es, newer, err := db.HistoryAfter(ctx, s.ID, seq, max)
				if err != nil {
					return fail(err)
				}
				return page(es, newer)
			})
			if got != want {
				t.Fatalf("HistoryAfter %d, %d messages:\n got %s\nwant %s", seq, max, got, want)
			}
			pages += 2
		}
		for _, e := range append(all, o[1]) {
			got, want := both(func() string {
				es, more, newer, err := db.HistoryAround(ctx, s.ID, e.ID, max)
				if err != nil {
					return fail(err)
				}
				return page(es, more, newer)
			})
			if got != want {
				t.Fatalf("HistoryAround %s (seq %d), %d messages:\n got %s\nwant %s", e.ID, e.Seq, max, got, want)
			}
			if e.ID == head.ID && !strings.Contains(got, head.ID) || e.SessionID != s.ID && !strings.Contains(got, "belongs to session") {
				t.Fatalf("HistoryAround %s, %d messages: %s", e.ID, max, got)
			}
			pages++
		}
	}
	// The pages compared include empty ones, off-branch errors and pages
	// reaching the root and the head: count what they hold.
	onBranch := map[string]bool{}
	for _, e := range branch {
		onBranch[e.ID] = true
	}
	offBranch := 0
	for _, e := range all {
		if _, _, _, err := db.HistoryAround(ctx, s.ID, e.ID, 1); !onBranch[e.ID] {
			offBranch++
			if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "not on the active branch") {
				t.Fatalf("around %s, off the branch: %v", e.ID, err)
			}
		} else if err != nil {
			t.Fatalf("around %s: %v", e.ID, err)
		}
	}
	if offBranch != len(all)-len(branch) || offBranch == 0 {
		t.Fatalf("%d entries off the branch, want %d", offBranch, len(all)-len(branch))
	}
	if first, _, err := db.HistoryAfter(ctx, s.ID, 0, 3); err != nil || first[0].ID != branch[0].ID {
		t.Fatalf("the first forwards page: %v, %v", first, err)
	}

	// The walk inside the server found those pages: its links are sound.
	st, err := loadState(ctx, db, db.pool, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, stop := range []int64{0, branch[0].Seq, b[10].Seq, b[10].Seq + 1, head.Seq - 1, head.Seq} {
		runs, at, ok, err := branchWalk(ctx, db, db.pool, s.ID, st, stop)
		if err != nil || !ok {
			t.Fatalf("branchWalk down to %d: ok %v, %v", stop, ok, err)
		}
		var want core.Entry
		for _, e := range branch {
			if e.Seq <= stop {
				want = e
			}
		}
		if at != want.ID {
			t.Fatalf("branchWalk down to %d: stopped at %q, want %q", stop, at, want.ID)
		}
		// From the head to the root, the branch is three runs of
		// consecutive seqs: the root's, b's and the last fork's.
		if stop == 0 && len(runs) != 3 {
			t.Fatalf("branchWalk to the root: %d runs %v, want 3", len(runs), runs)
		}
	}
	t.Logf("%d pages compared, %d entries off the branch", pages, offBranch)
}

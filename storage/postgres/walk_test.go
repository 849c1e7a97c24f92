package postgres_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
)

// TestWalkNamesTheProblem: a branched session's reads walk parent links
// (walkSQL), and a record damaged behind the store's back (the foreign keys
// switched off) is refused as corrupt, naming the missing parent, the
// missing head or the cycle, from every read that walks: ActiveBranch,
// History, HistoryAfter and HistoryAround.
func TestWalkNamesTheProblem(t *testing.T) {
	db := open(t)
	branched := func(title string) (core.Session, []core.Entry) {
		s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Title: title})
		if err != nil {
			t.Fatal(err)
		}
		var batch []core.NewEntry
		for i := range 1500 {
			batch = append(batch, msg(core.KindUserMessage, fmt.Sprint(title, i)))
		}
		first, err := db.Append(ctx, s.ID, batch[:5]...)
		if err != nil {
			t.Fatal(err)
		}
		rest, err := db.AppendTo(ctx, s.ID, first[2].ID, batch[5:]...)
		if err != nil {
			t.Fatal(err)
		}
		return s, append(first[:3], rest...)
	}
	orphan, o := branched("orphan")
	cycle, c := branched("cycle")
	nohead, n := branched("nohead")
	healthy, h := branched("healthy")
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`SET session_replication_role = replica`, // no foreign key checks
		fmt.Sprintf(`UPDATE entries SET parent_id = 'e_gone' WHERE id = '%s'`, o[1].ID),
		fmt.Sprintf(`UPDATE entries SET parent_id = '%s' WHERE id = '%s'`, c[1200].ID, c[0].ID),
		fmt.Sprintf(`UPDATE sessions SET head_id = 'e_nowhere' WHERE id = '%s'`, nohead.ID),
		`SET session_replication_role = origin`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Release()
	for _, c := range []struct {
		s    core.Session
		mid  core.Entry
		want string
	}{
		{orphan, o[700], `entry "` + o[1].ID + `" has parent "e_gone", which does not exist`},
		{cycle, c[700], "cycle"},
		{nohead, n[700], `head "e_nowhere" does not exist`},
	} {
		_, err := db.ActiveBranch(ctx, c.s.ID)
		storetest.WantCode(t, err, core.CodeCorrupt)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ActiveBranch: %v, want it to say %q", c.s.Title, err, c.want)
		}
		_, _, err = db.History(ctx, c.s.ID, 0, 2000)
		storetest.WantCode(t, err, core.CodeCorrupt)
		if _, _, err := db.HistoryAfter(ctx, c.s.ID, 0, 10); core.ErrorCode(err) != core.CodeCorrupt {
			t.Errorf("%s: HistoryAfter from the root: %v, want corrupt", c.s.Title, err)
		}
		if _, _, _, err := db.HistoryAround(ctx, c.s.ID, c.mid.ID, 2000); core.ErrorCode(err) != core.CodeCorrupt {
			t.Errorf("%s: HistoryAround: %v, want corrupt", c.s.Title, err)
		}
	}
	if br, err := db.ActiveBranch(ctx, healthy.ID); err != nil || len(br) != len(h) || br[len(br)-1].ID != h[len(h)-1].ID {
		t.Fatalf("the healthy session: %d entries, %v", len(br), err)
	}
}

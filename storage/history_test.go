package storage_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// TestHistoryPaging pages a session shaped
//
//	t:pre, u0, t:0a, t:0b, a0, u1, t:1a, t:1b, a1, ... u9, t:9a, t:9b, a9
//
// where tool entries ride along without counting as messages.
func TestHistoryPaging(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	mustAppend(t, db, s.ID, tool("pre"))
	for i := 0; i < 10; i++ {
		mustAppend(t, db, s.ID, user(fmt.Sprintf("u%d", i)), tool(fmt.Sprintf("%da", i)), tool(fmt.Sprintf("%db", i)),
			assistant(fmt.Sprintf("a%d", i)))
	}
	// Page 1: five messages back from the head.
	p1, more, err := db.History(ctx, s.ID, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := texts(p1), "a7,u8,t:8a,t:8b,a8,u9,t:9a,t:9b,a9"; got != want || !more {
		t.Fatalf("page 1 = %q more=%v, want %q more=true", got, more, want)
	}
	if p1[0].Seq != 33 { // t:pre is seq 1, round i is seqs 2+4i..5+4i
		t.Fatalf("page 1 starts at seq %d, want 33", p1[0].Seq)
	}
	// Page 2: before the oldest entry of page 1.
	p2, more, err := db.History(ctx, s.ID, p1[0].Seq, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := texts(p2), "u5,t:5a,t:5b,a5,u6,t:6a,t:6b,a6,u7,t:7a,t:7b"; got != want || !more {
		t.Fatalf("page 2 = %q more=%v, want %q more=true", got, more, want)
	}
	// Walk every page; together they are the whole branch, in order.
	var pages [][]core.Entry
	before := int64(0)
	for {
		p, more, err := db.History(ctx, s.ID, before, 5)
		if err != nil {
			t.Fatal(err)
		}
		pages = append([][]core.Entry{p}, pages...)
		if !more {
			break
		}
		before = p[0].Seq
		if len(pages) > 20 {
			t.Fatal("paging does not end")
		}
	}
	// 20 messages / 5 = 4 full pages; the leading tool entry comes alone on
	// a fifth page because the fourth stops at its fifth message, u0.
	if len(pages) != 5 || texts(pages[0]) != "t:pre" || texts(pages[1])[:3] != "u0," {
		t.Fatalf("pages = %d, first %q, second %q", len(pages), texts(pages[0]), texts(pages[1]))
	}
	var all []core.Entry
	for _, p := range pages {
		all = append(all, p...)
	}
	br, err := db.ActiveBranch(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if texts(all) != texts(br) || len(all) != 41 {
		t.Fatalf("pages joined = %q\nbranch = %q", texts(all), texts(br))
	}
	// maxMessages <= 0 means 60: the whole session fits.
	whole, more, err := db.History(ctx, s.ID, 0, 0)
	if err != nil || more || len(whole) != 41 {
		t.Fatalf("default page: %d entries more=%v %v", len(whole), more, err)
	}
	// beforeSeq past the head is the same as from the head.
	far, _, err := db.History(ctx, s.ID, 1000, 5)
	if err != nil || texts(far) != texts(p1) {
		t.Fatalf("History(before 1000) = %q, %v", texts(far), err)
	}
	// Before seq 1 there is nothing.
	none, more, err := db.History(ctx, s.ID, 1, 5)
	if err != nil || len(none) != 0 || more {
		t.Fatalf("History(before 1) = %q more=%v %v", texts(none), more, err)
	}

	// Moving the head back (no branch yet) shortens the branch.
	if err := db.MoveHead(ctx, s.ID, p2[3].ID); err != nil { // a5
		t.Fatal(err)
	}
	h, more, err := db.History(ctx, s.ID, 0, 2)
	if err != nil || texts(h) != "u5,t:5a,t:5b,a5" || !more {
		t.Fatalf("History after MoveHead = %q more=%v %v", texts(h), more, err)
	}
	h, _, err = db.History(ctx, s.ID, 30, 2) // seq 30 is past the head (a5 is seq 25)
	if err != nil || texts(h) != "u5,t:5a,t:5b,a5" {
		t.Fatalf("History(before 30) after MoveHead = %q, %v", texts(h), err)
	}
	h, _, err = db.History(ctx, s.ID, 25, 1)
	if err != nil || texts(h) != "u5,t:5a,t:5b" {
		t.Fatalf("History(before 25) after MoveHead = %q, %v", texts(h), err)
	}
}

// TestHistoryOnBranchedSession checks beforeSeq paging when entries of
// another branch sit between the branch's seqs.
func TestHistoryOnBranchedSession(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	a := mustAppend(t, db, s.ID, user("u1"), assistant("a1"), user("u2"), assistant("a2"))  // seqs 1-4
	if _, err := db.AppendTo(ctx, s.ID, a[1].ID, user("x2"), assistant("y2")); err != nil { // seqs 5-6
		t.Fatal(err)
	}
	if err := db.MoveHead(ctx, s.ID, a[3].ID); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, db, s.ID, user("u3"), assistant("a3")) // seqs 7-8 under a2
	h, more, err := db.History(ctx, s.ID, 7, 2)
	if err != nil || texts(h) != "u2,a2" || !more {
		t.Fatalf("History(before 7) = %q more=%v %v", texts(h), more, err)
	}
	h, _, err = db.History(ctx, s.ID, 0, 0)
	if err != nil || texts(h) != "u1,a1,u2,a2,u3,a3" {
		t.Fatalf("History = %q, %v", texts(h), err)
	}
}

func TestIntegrityFindsEachProblem(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	mk := func(title string, n int) (core.Session, []core.Entry) {
		s, err := db.CreateSession(ctx, core.Session{Harness: "codex", Title: title})
		if err != nil {
			t.Fatal(err)
		}
		var es []core.Entry
		for i := 0; i < n; i++ {
			es = append(es, mustAppend(t, db, s.ID, user(fmt.Sprintf("%s%d", title, i)))...)
		}
		return s, es
	}
	healthy1, h1 := mk("healthy", 3)
	healthy2, _ := mk("healthy2", 2)
	cycle, c := mk("cycle", 3)
	orphan, o := mk("orphan", 3)
	cross, x := mk("cross", 2)
	nohead, _ := mk("nohead", 2)
	side, sd := mk("side", 3)
	// side branch under the root of "side", then the head goes back.
	sideBranch, err := db.AppendTo(ctx, side.ID, sd[0].ID, user("side-branch"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.MoveHead(ctx, side.ID, sd[2].ID); err != nil {
		t.Fatal(err)
	}

	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`PRAGMA foreign_keys = OFF`,
		fmt.Sprintf(`UPDATE entries SET parent_id = '%s' WHERE id = '%s'`, c[2].ID, c[0].ID),
		fmt.Sprintf(`UPDATE entries SET parent_id = 'e_gone' WHERE id = '%s'`, o[1].ID),
		fmt.Sprintf(`UPDATE entries SET parent_id = '%s' WHERE id = '%s'`, h1[0].ID, x[1].ID),
		fmt.Sprintf(`UPDATE sessions SET head_id = 'e_nowhere' WHERE id = '%s'`, nohead.ID),
		fmt.Sprintf(`UPDATE entries SET parent_id = 'e_lost' WHERE id = '%s'`, sideBranch[0].ID),
		`PRAGMA foreign_keys = ON`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()

	wantProblem := map[string]string{
		cycle.ID:  "cycle",
		orphan.ID: `parent "e_gone", which does not exist`,
		cross.ID:  "belongs to session " + healthy1.ID,
		nohead.ID: `head "e_nowhere" does not exist`,
		side.ID:   `parent "e_lost", which does not exist`,
	}
	for id, want := range wantProblem {
		if id == side.ID {
			continue // its active branch is sound
		}
		_, err := db.ActiveBranch(ctx, id)
		wantCode(t, err, core.CodeCorrupt)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ActiveBranch(%s) = %v, want it to mention %q", id, err, want)
		}
		_, _, err = db.History(ctx, id, 0, 100)
		wantCode(t, err, core.CodeCorrupt)
	}
	if br, err := db.ActiveBranch(ctx, side.ID); err != nil || len(br) != 3 {
		t.Fatalf("side session's active branch: %d %v", len(br), err)
	}
	for _, id := range []string{healthy1.ID, healthy2.ID} {
		if _, err := db.ActiveBranch(ctx, id); err != nil {
			t.Fatalf("healthy session %s: %v", id, err)
		}
	}

	rep, err := db.Integrity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.SessionsChecked != 7 || rep.EntriesChecked != 3+2+3+3+2+2+4 {
		t.Fatalf("report counts: sessions %d entries %d", rep.SessionsChecked, rep.EntriesChecked)
	}
	got := map[string]string{}
	for _, p := range rep.Problems {
		if _, dup := got[p.SessionID]; dup {
			t.Errorf("session %s reported twice", p.SessionID)
		}
		got[p.SessionID] = p.Problem
	}
	if len(got) != len(wantProblem) {
		t.Errorf("problems = %v, want sessions %v", got, wantProblem)
	}
	for id, want := range wantProblem {
		if !strings.Contains(got[id], want) {
			t.Errorf("problem for %s = %q, want it to mention %q", id, got[id], want)
		}
	}
	for _, id := range []string{healthy1.ID, healthy2.ID} {
		if p, bad := got[id]; bad {
			t.Errorf("healthy session %s reported: %s", id, p)
		}
	}
}

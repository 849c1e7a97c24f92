package storage_test

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// queryPlan returns the EXPLAIN QUERY PLAN lines of query.
func queryPlan(t *testing.T, db *storage.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.SQL().QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestListPageIsAnIndexSeek checks the plan of a session list page for
// every filter the list has (archived hidden or included, a harness or
// not, first page or from a cursor), on a database with statistics: each
// reads one index range newest first, never sorts, never scans the table.
func TestListPageIsAnIndexSeek(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 300; i++ {
		if _, err := db.CreateSession(ctx, core.Session{Harness: []string{"claude-code", "codex", "opencode"}[i%3],
			Archived: i%5 == 0, UpdatedAt: base.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.SQL().ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	_, cursor, err := db.ListSessions(ctx, core.ListQuery{Limit: 10})
	if err != nil || cursor == "" {
		t.Fatalf("first page: cursor %q, %v", cursor, err)
	}
	for _, archived := range []bool{false, true} {
		for _, harness := range []string{"", "codex"} {
			for _, cur := range []string{"", cursor} {
				q := core.ListQuery{IncludeArchived: archived, Harness: harness, Cursor: cur}
				query, args, err := storage.ListSQL(q, 100)
				if err != nil {
					t.Fatal(err)
				}
				plan := queryPlan(t, db, query, args...)
				index := "sessions_list"
				if harness != "" {
					index = "sessions_harness_list"
				}
				searches := 0
				for _, line := range plan {
					if strings.Contains(line, "TEMP B-TREE") || strings.HasPrefix(line, "SCAN") {
						t.Errorf("%+v: plan sorts or scans: %q\n%s", q, line, strings.Join(plan, "\n"))
					}
					if strings.HasPrefix(line, "SEARCH") {
						searches++
						if !strings.Contains(line, "INDEX "+index+" ") {
							t.Errorf("%+v: %q does not use %s", q, line, index)
						}
						if cur != "" && !strings.Contains(line, "(updated_at,id)<(?,?)") {
							t.Errorf("%+v: %q does not seek to the cursor", q, line)
						}
					}
				}
				if want := map[bool]int{false: 1, true: 2}[archived]; searches != want {
					t.Errorf("%+v: %d index searches, want %d:\n%s", q, searches, want, strings.Join(plan, "\n"))
				}
			}
		}
	}
}

// TestListPagesOverTies pages through sessions of which many share an
// updated_at, with every filter and several page sizes: each session comes
// exactly once, in order (newest first, ties by id descending).
func TestListPagesOverTies(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(14, 3))
	var all []core.Session
	for i := 0; i < 61; i++ {
		s, err := db.CreateSession(ctx, core.Session{Harness: []string{"a", "b", "c"}[rng.IntN(3)],
			Archived: rng.IntN(4) == 0, UpdatedAt: base.Add(time.Duration(rng.IntN(5)) * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b core.Session) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	for _, archived := range []bool{false, true} {
		for _, harness := range []string{"", "b"} {
			var want []string
			for _, s := range all {
				if (archived || !s.Archived) && (harness == "" || s.Harness == harness) {
					want = append(want, s.ID)
				}
			}
			for _, limit := range []int{1, 2, 3, 7, 100} {
				var got []string
				cursor := ""
				for pages := 0; ; pages++ {
					if pages > len(all)+1 {
						t.Fatalf("archived=%v harness=%q limit=%d: paging does not end", archived, harness, limit)
					}
					page, next, err := db.ListSessions(ctx, core.ListQuery{Cursor: cursor, Limit: limit,
						IncludeArchived: archived, Harness: harness})
					if err != nil {
						t.Fatal(err)
					}
					if len(page) > limit || (next != "" && len(page) != limit) {
						t.Fatalf("page of %d with limit %d, next %q", len(page), limit, next)
					}
					for _, s := range page {
						got = append(got, s.ID)
					}
					if next == "" {
						break
					}
					cursor = next
				}
				if !slices.Equal(got, want) {
					t.Errorf("archived=%v harness=%q limit=%d:\n got %v\nwant %v", archived, harness, limit, got, want)
				}
			}
		}
	}
}

// refTree is the reference for branched sessions: every entry in memory
// and the head, with the active branch found by following parents.
type refTree struct {
	byID  map[string]core.Entry
	order []core.Entry // by seq
	head  string
}

func (r *refTree) add(es []core.Entry) {
	for _, e := range es {
		r.byID[e.ID] = e
		r.order = append(r.order, e)
	}
	if len(es) > 0 {
		r.head = es[len(es)-1].ID
	}
}

// branch returns the active branch, root first.
func (r *refTree) branch() []core.Entry {
	var out []core.Entry
	for id := r.head; id != ""; id = r.byID[id].ParentID {
		out = append(out, r.byID[id])
	}
	slices.Reverse(out)
	return out
}

// page is History by definition: from the newest branch entry with
// seq < before (the head when before is 0 or past it), back until max
// messages are in.
func refPage(branch []core.Entry, before int64, max int) (page []core.Entry, start string, more bool) {
	i := len(branch) - 1
	if before > 0 && before <= branch[i].Seq {
		for i >= 0 && branch[i].Seq >= before {
			i--
		}
	}
	if i < 0 {
		return nil, "", false
	}
	j, count := i, 0
	for ; j >= 0; j-- {
		if branch[j].Kind.IsMessage() {
			count++
		}
		if count == max {
			break
		}
	}
	j = max0(j)
	return branch[j : i+1], branch[i].ID, j > 0
}

func max0(i int) int {
	if i < 0 {
		return 0
	}
	return i
}

// refLink is an entry's place by the skew-binary rule of entry_links.
type refLink struct {
	seq, depth, jump int64
	parent           int64 // 0 for a root
}

func refLinks(r *refTree) []refLink {
	bySeq := map[int64]refLink{}
	var out []refLink
	for _, e := range r.order {
		l := refLink{seq: e.Seq, jump: e.Seq}
		if e.ParentID != "" {
			p := bySeq[r.byID[e.ParentID].Seq]
			j := bySeq[p.jump]
			jj := bySeq[j.jump]
			l.parent, l.depth, l.jump = p.seq, p.depth+1, p.seq
			if p.depth-j.depth == j.depth-jj.depth {
				l.jump = j.jump
			}
		}
		bySeq[e.Seq] = l
		out = append(out, l)
	}
	return out
}

// refChain is how many first entries of the reference tree are one chain
// before the first that branches (-1: the session never branched).
func refChain(r *refTree) int64 {
	for i, e := range r.order {
		if (e.ParentID == "" && i > 0) || (e.ParentID != "" && r.byID[e.ParentID].Seq < r.order[i-1].Seq) {
			return r.order[i-1].Seq
		}
	}
	return -1
}

// dbLinks returns the session's entry_links as readers see them: a row
// where there is one, else the implicit row of an entry of the chain the
// session began with; chain is the recorded length of that chain (-1 when
// the session never branched) and inChain the rows written inside it.
func dbLinks(t *testing.T, db *storage.DB, sid string) (links []refLink, chain int64, inChain int) {
	t.Helper()
	var branched bool
	var maxSeq int64
	if err := db.SQL().QueryRow(`SELECT branched, (SELECT coalesce(max(seq), 0) FROM entries WHERE session_id = ?)
		FROM sessions WHERE id = ?`, sid, sid).Scan(&branched, &maxSeq); err != nil {
		t.Fatal(err)
	}
	rows, err := db.SQL().Query(`SELECT seq, coalesce(parent_seq, 0), depth, jump_seq FROM entry_links
		WHERE session_id = ? ORDER BY seq`, sid)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	explicit := map[int64]refLink{}
	chain = 0
	if !branched {
		chain = -1
	}
	for rows.Next() {
		var l refLink
		if err := rows.Scan(&l.seq, &l.parent, &l.depth, &l.jump); err != nil {
			t.Fatal(err)
		}
		if l.seq == 0 {
			chain = l.jump
			continue
		}
		explicit[l.seq] = l
	}
	implicit := chain
	if !branched {
		implicit = maxSeq
	}
	for seq := int64(1); seq <= maxSeq; seq++ {
		if l, ok := explicit[seq]; ok {
			links = append(links, l)
			if seq <= implicit {
				inChain++
			}
		} else if seq <= implicit {
			links = append(links, refLink{seq: seq, parent: seq - 1, depth: seq - 1, jump: seq - storage.JumpLen(seq-1)})
		}
	}
	return links, chain, inChain
}

// randomTree grows a session by random appends at the head, appends under
// any entry (a branch, now the head), new roots and head moves.
func randomTree(t *testing.T, db *storage.DB, rng *rand.Rand, n int) (core.Session, *refTree) {
	t.Helper()
	ctx := context.Background()
	s := newSession(t, db)
	r := &refTree{byID: map[string]core.Entry{}}
	kinds := func(k int) []core.NewEntry {
		var es []core.NewEntry
		for range k {
			switch rng.IntN(4) {
			case 0:
				es = append(es, user(fmt.Sprint("u", len(r.order)+len(es))))
			case 1:
				es = append(es, assistant(fmt.Sprint("a", len(r.order)+len(es))))
			default:
				es = append(es, tool(fmt.Sprint("t", len(r.order)+len(es))))
			}
		}
		return es
	}
	for len(r.order) < n {
		switch op := rng.IntN(20); {
		case op < 12 || len(r.order) == 0:
			r.add(mustAppend(t, db, s.ID, kinds(1+rng.IntN(4))...))
		case op < 18:
			parent := r.order[rng.IntN(len(r.order))].ID
			es, err := db.AppendTo(ctx, s.ID, parent, kinds(1+rng.IntN(3))...)
			if err != nil {
				t.Fatal(err)
			}
			r.add(es)
		case op < 19:
			es, err := db.AppendTo(ctx, s.ID, "", kinds(1)...)
			if err != nil {
				t.Fatal(err)
			}
			r.add(es)
		default:
			r.head = r.order[rng.IntN(len(r.order))].ID
			if err := db.MoveHead(ctx, s.ID, r.head); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s, r
}

func ids(es []core.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// checkPages compares every history page of the session (from the head,
// before every seq, past the head) with the reference.
func checkPages(t *testing.T, db *storage.DB, sid string, r *refTree, label string) {
	t.Helper()
	ctx := context.Background()
	branch := r.branch()
	last := r.order[len(r.order)-1].Seq
	for before := int64(0); before <= last+1; before++ {
		for _, max := range []int{1, 2, 5} {
			want, _, wantMore := refPage(branch, before, max)
			got, more, err := db.History(ctx, sid, before, max)
			if err != nil {
				t.Fatalf("%s: History(before %d, max %d): %v", label, before, max, err)
			}
			if !slices.Equal(ids(got), ids(want)) || more != wantMore {
				t.Fatalf("%s: History(before %d, max %d) = %v more=%v, want %v more=%v",
					label, before, max, ids(got), more, ids(want), wantMore)
			}
		}
	}
}

// TestBranchedPagesMatchTheReference grows random trees (branches, new
// roots, head moves) and checks, for each: the entry_links rows against the
// skew-binary rule computed in memory; the jump seek's answer for every
// seq; every history page against the reference; the same pages by the
// old walk from the head (entry_links emptied); and that a dump restored
// into another database gets the same entry_links rows.
func TestBranchedPagesMatchTheReference(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	other := storagetest.Open(t)
	for seed := uint64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewPCG(seed, 14))
		s, r := randomTree(t, db, rng, 150+rng.IntN(150))
		label := fmt.Sprintf("seed %d (%d entries)", seed, len(r.order))
		want := refLinks(r)
		got, chain, inChain := dbLinks(t, db, s.ID)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: entry_links\n got %v\nwant %v", label, got, want)
		}
		if chain != refChain(r) || inChain != 0 {
			t.Fatalf("%s: chain of %d recorded (%d rows written in it), want %d and none", label, chain, inChain, refChain(r))
		}
		// The rule's jumps point to ancestors (or the root to itself).
		for _, l := range want {
			anc := map[int64]bool{l.seq: l.parent == 0}
			for p := l.parent; p != 0; p = want[slices.IndexFunc(want, func(x refLink) bool { return x.seq == p })].parent {
				anc[p] = true
			}
			if !anc[l.jump] {
				t.Fatalf("%s: seq %d jumps to %d, not an ancestor", label, l.seq, l.jump)
			}
		}
		branch := r.branch()
		head := branch[len(branch)-1]
		for before := int64(1); before <= head.Seq; before++ {
			_, wantStart, _ := refPage(branch, before, 1)
			got, ok, _, err := storage.LinkedEntryBefore(ctx, db, s.ID, head.Seq, before)
			if err != nil || !ok || got != wantStart {
				t.Fatalf("%s: seek before %d = %q ok=%v %v, want %q", label, before, got, ok, err, wantStart)
			}
		}
		checkPages(t, db, s.ID, r, label)

		d, err := db.Dump(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Restore(ctx, d); err != nil {
			t.Fatal(err)
		}
		if got, chain, _ := dbLinks(t, other, s.ID); !slices.Equal(got, want) || chain != refChain(r) {
			t.Fatalf("%s: entry_links after a restore differ from the original's", label)
		}

		if _, err := db.SQL().Exec(`DELETE FROM entry_links WHERE session_id = ?`, s.ID); err != nil {
			t.Fatal(err)
		}
		checkPages(t, db, s.ID, r, label+" by the walk")
	}
}

// TestBranchedPageSeekIsIndexed checks the plan of the jump seek: the
// start and every step read entry_links by its primary key; no table is
// scanned (only the one-row anchor and the recursion's own queue).
func TestBranchedPageSeekIsIndexed(t *testing.T) {
	db := storagetest.Open(t)
	plan := queryPlan(t, db, storage.LinkBeforeSQL, "s", 500, 100, 4096, 20)
	keyed := 0
	for _, line := range plan {
		if strings.HasPrefix(line, "SCAN") && line != "SCAN s" && line != "SCAN CONSTANT ROW" &&
			!strings.HasPrefix(line, "SCAN (subquery-") {
			t.Errorf("the seek scans a table: %q\n%s", line, strings.Join(plan, "\n"))
		}
		if strings.HasPrefix(line, "SEARCH") {
			if strings.Contains(line, "PRIMARY KEY (session_id=? AND seq=?)") {
				keyed++
			} else {
				t.Errorf("the seek reads without its key: %q", line)
			}
		}
	}
	if keyed != 2 {
		t.Errorf("%d keyed reads, want 2 (the start, each step):\n%s", keyed, strings.Join(plan, "\n"))
	}
}

// TestMigrationBackfillsLinks opens a database as a Bridge before
// migration 6 left it (branched and linear sessions, one session with a
// broken parent link, migration 6's objects dropped) and checks that the upgrade gives
// every sound entry its entry_links row by the same rule as the trigger,
// none to the broken ones, and that pages are right on both.
func TestMigrationBackfillsLinks(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/bridge.db"
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(6, 6))
	s1, r1 := randomTree(t, db, rng, 120)
	linear := newSession(t, db)
	r2 := &refTree{byID: map[string]core.Entry{}}
	r2.add(mustAppend(t, db, linear.ID, user("l1"), assistant("l2"), tool("l3"), user("l4")))
	empty := newSession(t, db)

	// More of the tree, and of the linear session.
	es, err := db.AppendTo(ctx, s1.ID, r1.order[len(r1.order)/2].ID, user("old1"), assistant("old2"))
	if err != nil {
		t.Fatal(err)
	}
	r1.add(es)
	r1.add(mustAppend(t, db, s1.ID, user("old3")))
	r2.add(mustAppend(t, db, linear.ID, assistant("l5")))
	// A branched session whose head hangs under a missing entry.
	broken := newSession(t, db)
	b := mustAppend(t, db, broken.ID, user("b1"), assistant("b2"))
	if _, err := db.AppendTo(ctx, broken.ID, b[0].ID, assistant("b3")); err != nil {
		t.Fatal(err)
	}
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`PRAGMA foreign_keys = OFF`,
		`INSERT INTO entries (id, session_id, parent_id, seq, kind, payload, created_at)
			VALUES ('e_orphan', '` + broken.ID + `', 'e_missing', 4, 'message.assistant', '{"text":"b4"}', 0)`,
		`INSERT INTO entries (id, session_id, parent_id, seq, kind, payload, created_at)
			VALUES ('e_orphan2', '` + broken.ID + `', 'e_orphan', 5, 'message.user', '{"text":"b5"}', 0)`,
		`UPDATE sessions SET head_id = 'e_orphan2' WHERE id = '` + broken.ID + `'`,
		`PRAGMA foreign_keys = ON`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	// Back to the schema before migration 6 (the entries table is the same).
	for _, q := range []string{`DROP TABLE entry_links`,
		`DROP INDEX sessions_list`, `DROP INDEX sessions_harness_list`,
		`CREATE INDEX sessions_updated ON sessions (updated_at DESC, id DESC)`,
		`DELETE FROM schema_migrations WHERE version = 6`} {
		if _, err := db.SQL().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	defer db.Close()
	// A session that had branched gets a row for every entry; one that
	// never did needs none (its entries are one chain).
	if got, chain, _ := dbLinks(t, db, s1.ID); !slices.Equal(got, refLinks(r1)) || chain != 0 {
		t.Fatalf("branched session after the upgrade (chain %d):\n got %v\nwant %v", chain, got, refLinks(r1))
	}
	if n := countLinks(t, db, linear.ID); n != 0 {
		t.Fatalf("the linear session got %d rows, want none", n)
	}
	if got, _, _ := dbLinks(t, db, linear.ID); !slices.Equal(got, refLinks(r2)) {
		t.Fatalf("linear session after the upgrade:\n got %v\nwant %v", got, refLinks(r2))
	}
	if n := countLinks(t, db, empty.ID); n != 0 {
		t.Fatalf("empty session has %d rows", n)
	}
	if n := countLinks(t, db, broken.ID); n != 3 {
		t.Fatalf("broken session: %d rows, want the three sound entries' only", n)
	}
	checkPages(t, db, s1.ID, r1, "upgraded tree")
	checkPages(t, db, linear.ID, r2, "upgraded linear session")
	_, _, err = db.History(ctx, broken.ID, 5, 1)
	wantCode(t, err, core.CodeCorrupt)
	if !strings.Contains(err.Error(), "e_missing") {
		t.Fatalf("the broken session's error does not name the missing entry: %v", err)
	}
	// New entries after the upgrade continue the backfilled rows.
	es, err = db.AppendTo(ctx, s1.ID, r1.order[3].ID, user("new1"), tool("new2"))
	if err != nil {
		t.Fatal(err)
	}
	r1.add(es)
	if got, _, _ := dbLinks(t, db, s1.ID); !slices.Equal(got, refLinks(r1)) {
		t.Fatalf("after a new branch:\n got %v\nwant %v", got, refLinks(r1))
	}
	checkPages(t, db, s1.ID, r1, "upgraded tree, new branch")
	// The linear session branches after the upgrade: its first five
	// entries stay an implicit chain.
	es, err = db.AppendTo(ctx, linear.ID, r2.order[1].ID, user("l6"), assistant("l7"))
	if err != nil {
		t.Fatal(err)
	}
	r2.add(es)
	if got, chain, inChain := dbLinks(t, db, linear.ID); !slices.Equal(got, refLinks(r2)) || chain != 5 || inChain != 0 {
		t.Fatalf("linear session after it branched (chain %d, %d rows in it):\n got %v\nwant %v", chain, inChain, got, refLinks(r2))
	}
	checkPages(t, db, linear.ID, r2, "upgraded linear session, branched")
	// The list still pages with the indexes back.
	if page, _, err := db.ListSessions(ctx, core.ListQuery{}); err != nil || len(page) != 4 {
		t.Fatalf("list after the upgrade: %d sessions, %v", len(page), err)
	}
}

func countLinks(t *testing.T, db *storage.DB, sid string) int {
	t.Helper()
	var n int
	if err := db.SQL().QueryRow(`SELECT count(*) FROM entry_links WHERE session_id = ?`, sid).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUnbranchedSessionsWriteNoLinks checks that entry_links costs a
// session nothing until it branches: appends at the head, a head moved
// back without an append, and a restore of such a session write no row.
func TestUnbranchedSessionsWriteNoLinks(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	other := storagetest.Open(t)
	s := newSession(t, db)
	es := mustAppend(t, db, s.ID, user("u1"), assistant("a1"))
	mustAppend(t, db, s.ID, tool("t1"), user("u2"))
	if _, err := db.AppendTo(ctx, s.ID, es[len(es)-1].ID); err != nil { // nothing to add
		t.Fatal(err)
	}
	if err := db.MoveHead(ctx, s.ID, es[0].ID); err != nil {
		t.Fatal(err)
	}
	d, err := db.Dump(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Restore(ctx, d); err != nil {
		t.Fatal(err)
	}
	if n, m := countLinks(t, db, s.ID), countLinks(t, other, s.ID); n != 0 || m != 0 {
		t.Fatalf("a session that never branched has %d rows (%d restored), want none", n, m)
	}
	// Its first branch records the chain of 4 and one row.
	if _, err := db.Append(ctx, s.ID, assistant("a1'")); err != nil {
		t.Fatal(err)
	}
	if n := countLinks(t, db, s.ID); n != 2 {
		t.Fatalf("after the first branch: %d rows, want the chain's and the new entry's", n)
	}
}

// TestBranchedSeekStepsGrowWithTheLogOfTheDepth counts the links the seek
// follows to every point of a 20,000-entry branch: never more than four per
// doubling of the depth, so a page far back costs about what one at the
// head costs (the walk it replaces took one step per entry).
func TestBranchedSeekStepsGrowWithTheLogOfTheDepth(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	storage.DisableSearchIndex(db)
	s := newSession(t, db)
	first := mustAppend(t, db, s.ID, user("root"), assistant("a"))
	if _, err := db.AppendTo(ctx, s.ID, first[0].ID, assistant("branch")); err != nil {
		t.Fatal(err)
	}
	chunk := make([]core.NewEntry, 1000)
	for i := range chunk {
		chunk[i] = tool("t")
	}
	var last []core.Entry
	for range 20 {
		last = mustAppend(t, db, s.ID, chunk...)
	}
	head := last[len(last)-1].Seq
	limit := 4 * (bits.Len64(uint64(head)) + 1)
	worst := 0
	for before := int64(1); before <= head; before += 1 + before/50 {
		id, ok, steps, err := storage.LinkedEntryBefore(ctx, db, s.ID, head, before)
		if err != nil || !ok || (before > 1 && id == "") {
			t.Fatalf("seek before %d: %q ok=%v %v", before, id, ok, err)
		}
		worst = max(worst, steps)
	}
	if worst > limit {
		t.Fatalf("the seek followed up to %d links on a branch of %d entries, want at most %d", worst, head, limit)
	}
	t.Logf("at most %d links followed on a branch of %d entries", worst, head)
}

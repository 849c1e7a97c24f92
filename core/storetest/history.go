package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// The history parts of the suite: pages backwards, forwards and around an
// entry, along the active branch.
func testHistory(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	MustAppend(t, st, s.ID, tool("pre"))
	for i := range 10 {
		MustAppend(t, st, s.ID, user(fmt.Sprintf("u%d", i)), tool(fmt.Sprintf("%da", i)), assistant(fmt.Sprintf("a%d", i)))
	}
	// Five messages back from the head; tools do not count.
	p1, more, err := st.History(ctx, s.ID, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Texts(p1), "a7,u8,t:8a,a8,u9,t:9a,a9"; got != want || !more {
		t.Fatalf("page 1 = %q more=%v, want %q more=true", got, more, want)
	}
	// Every page, walked back, is the whole branch in order.
	var all []core.Entry
	before := int64(0)
	for pages := 0; ; pages++ {
		p, more, err := st.History(ctx, s.ID, before, 5)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append([]core.Entry(nil), p...), all...)
		if !more {
			break
		}
		if len(p) == 0 || pages > 20 {
			t.Fatal("paging does not end")
		}
		before = p[0].Seq
	}
	if Texts(all) != Texts(branch(t, st, s.ID)) {
		t.Fatalf("pages %q differ from the branch %q", Texts(all), Texts(branch(t, st, s.ID)))
	}
	_, _, err = st.History(ctx, "s_missing", 0, 5)
	WantCode(t, err, core.CodeNotFound)
}

// forwardAll pages the active branch forwards from afterSeq to the head,
// max messages a page, and returns every entry read.
func forwardAll(t *testing.T, st core.Store, sid string, afterSeq int64, max int) []core.Entry {
	t.Helper()
	var all []core.Entry
	for pages := 0; ; pages++ {
		p, newer, err := st.HistoryAfter(ctx, sid, afterSeq, max)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p...)
		if !newer {
			return all
		}
		if len(p) == 0 || pages > 200 {
			t.Fatal("paging forwards does not end")
		}
		afterSeq = p[len(p)-1].Seq
	}
}

// backAll pages the active branch backwards from beforeSeq to the root.
func backAll(t *testing.T, st core.Store, sid string, beforeSeq int64, max int) []core.Entry {
	t.Helper()
	var all []core.Entry
	for pages := 0; ; pages++ {
		p, more, err := st.History(ctx, sid, beforeSeq, max)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append([]core.Entry(nil), p...), all...)
		if !more {
			return all
		}
		if len(p) == 0 || pages > 200 {
			t.Fatal("paging backwards does not end")
		}
		beforeSeq = p[0].Seq
	}
}

func testHistoryForward(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	MustAppend(t, st, s.ID, tool("pre"))
	var es []core.Entry
	for i := range 10 {
		es = append(es, MustAppend(t, st, s.ID, user(fmt.Sprintf("u%d", i)), tool(fmt.Sprintf("%da", i)), assistant(fmt.Sprintf("a%d", i)))...)
	}
	// Five messages forwards from the root; tools do not count, and the
	// page ends at its fifth message.
	p1, newer, err := st.HistoryAfter(ctx, s.ID, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Texts(p1), "t:pre,u0,t:0a,a0,u1,t:1a,a1,u2"; got != want || !newer {
		t.Fatalf("page 1 = %q newer=%v, want %q newer=true", got, newer, want)
	}
	// From the middle: the entries after a0.
	p, newer, err := st.HistoryAfter(ctx, s.ID, es[2].Seq, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Texts(p), "u1,t:1a,a1"; got != want || !newer {
		t.Fatalf("page after a0 = %q newer=%v, want %q newer=true", got, newer, want)
	}
	// The last page ends at the head and says so.
	p, newer, err = st.HistoryAfter(ctx, s.ID, es[len(es)-3].Seq, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Texts(p), "t:9a,a9"; got != want || newer {
		t.Fatalf("last page = %q newer=%v, want %q newer=false", got, newer, want)
	}
	// Every page, walked forwards, is the whole branch in order, whatever the
	// page size.
	for _, max := range []int{1, 3, 7, 100} {
		if got, want := Texts(forwardAll(t, st, s.ID, 0, max)), Texts(branch(t, st, s.ID)); got != want {
			t.Fatalf("forward pages of %d = %q, branch %q", max, got, want)
		}
	}
	// After the head there is nothing; nor after a head moved back.
	if p, newer, err := st.HistoryAfter(ctx, s.ID, es[len(es)-1].Seq, 5); err != nil || len(p) != 0 || newer {
		t.Fatalf("after the head = %q newer=%v err=%v, want nothing", Texts(p), newer, err)
	}
	if err := st.MoveHead(ctx, s.ID, es[5].ID); err != nil {
		t.Fatal(err)
	}
	if got, want := Texts(forwardAll(t, st, s.ID, es[1].Seq, 2)), "a0,u1,t:1a,a1"; got != want {
		t.Fatalf("forward to a moved head = %q, want %q", got, want)
	}
	if p, newer, err := st.HistoryAfter(ctx, s.ID, es[5].Seq, 5); err != nil || len(p) != 0 || newer {
		t.Fatalf("after a moved head = %q newer=%v err=%v, want nothing", Texts(p), newer, err)
	}
	_, _, err = st.HistoryAfter(ctx, "s_missing", 0, 5)
	WantCode(t, err, core.CodeNotFound)
	empty := newSession(t, st, "fake")
	if p, newer, err := st.HistoryAfter(ctx, empty.ID, 0, 5); err != nil || len(p) != 0 || newer {
		t.Fatalf("an empty session's page = %q newer=%v err=%v", Texts(p), newer, err)
	}
}

// sparseBranch builds a session whose active branch has an entry of another
// branch between each two of its own (so its seqs have gaps) and returns
// the active branch.
func sparseBranch(t *testing.T, st core.Store, n int) (core.Session, []core.Entry) {
	t.Helper()
	s := newSession(t, st, "fake")
	for i := range n {
		main := MustAppend(t, st, s.ID, user(fmt.Sprintf("u%d", i)), tool(fmt.Sprintf("%d", i)), assistant(fmt.Sprintf("a%d", i)))
		if _, err := st.AppendTo(ctx, s.ID, main[1].ID, user(fmt.Sprintf("x%d", i))); err != nil {
			t.Fatal(err)
		}
		if err := st.MoveHead(ctx, s.ID, main[2].ID); err != nil {
			t.Fatal(err)
		}
	}
	return s, branch(t, st, s.ID)
}

func testHistoryForwardBranched(t *testing.T, st core.Store) {
	s, br := sparseBranch(t, st, 60)
	if strings.Contains(Texts(br), "x") || len(br) != 180 {
		t.Fatalf("active branch = %q", Texts(br))
	}
	for _, max := range []int{1, 5, 60} {
		if got, want := Texts(forwardAll(t, st, s.ID, 0, max)), Texts(br); got != want {
			t.Fatalf("forward pages of %d = %q, branch %q", max, got, want)
		}
	}
	// From the seq of another branch's entry (x1, after a1): the branch's
	// entries after it.
	x, _, err := st.HistoryAfter(ctx, s.ID, br[5].Seq+1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Texts(x), "u2"; got != want {
		t.Fatalf("page after x1's seq = %q, want %q", got, want)
	}
	// Forwards from the middle meets backwards from there.
	mid := br[90]
	fwd := forwardAll(t, st, s.ID, mid.Seq, 7)
	back := backAll(t, st, s.ID, mid.Seq+1, 7)
	if got, want := Texts(append(back, fwd...)), Texts(br); got != want {
		t.Fatalf("back and forward from the middle = %q, branch %q", got, want)
	}
}

func testHistoryAround(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	var es []core.Entry
	for i := range 20 {
		es = append(es, MustAppend(t, st, s.ID, user(fmt.Sprintf("u%d", i)), tool(fmt.Sprintf("%d", i)), assistant(fmt.Sprintf("a%d", i)))...)
	}
	hit := es[30] // u10
	p, more, newer, err := st.HistoryAround(ctx, s.ID, hit.ID, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Texts(p), "a9,u10,t:10,a10,u11"; got != want || !more || !newer {
		t.Fatalf("page around u10 = %q more=%v newer=%v, want %q, both true", got, more, newer, want)
	}
	// From the page, forwards and backwards reach both ends.
	all := append(backAll(t, st, s.ID, p[0].Seq, 3), p...)
	all = append(all, forwardAll(t, st, s.ID, p[len(p)-1].Seq, 3)...)
	if got, want := Texts(all), Texts(branch(t, st, s.ID)); got != want {
		t.Fatalf("paging from around = %q, branch %q", got, want)
	}
	// At the ends.
	if p, more, newer, err := st.HistoryAround(ctx, s.ID, es[0].ID, 4); err != nil || Texts(p) != "u0,t:0,a0,u1" || more || !newer {
		t.Fatalf("around the first = %q more=%v newer=%v err=%v", Texts(p), more, newer, err)
	}
	if p, more, newer, err := st.HistoryAround(ctx, s.ID, es[len(es)-1].ID, 4); err != nil || Texts(p) != "u19,t:19,a19" || !more || newer {
		t.Fatalf("around the head = %q more=%v newer=%v err=%v", Texts(p), more, newer, err)
	}
	// A tool entry is a place too.
	if p, _, _, err := st.HistoryAround(ctx, s.ID, es[31].ID, 2); err != nil || Texts(p) != "u10,t:10,a10" {
		t.Fatalf("around t:10 = %q err=%v", Texts(p), err)
	}
	_, _, _, err = st.HistoryAround(ctx, s.ID, "e_missing", 4)
	WantCode(t, err, core.CodeNotFound)
	_, _, _, err = st.HistoryAround(ctx, "s_missing", hit.ID, 4)
	WantCode(t, err, core.CodeNotFound)
	o := newSession(t, st, "fake")
	other := MustAppend(t, st, o.ID, user("elsewhere"))
	_, _, _, err = st.HistoryAround(ctx, s.ID, other[0].ID, 4)
	WantCode(t, err, core.CodeInvalid)
	// An entry off the active branch is refused, naming the branch.
	side, err := st.AppendTo(ctx, s.ID, es[5].ID, user("side"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MoveHead(ctx, s.ID, es[len(es)-1].ID); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = st.HistoryAround(ctx, s.ID, side[0].ID, 4)
	WantCode(t, err, core.CodeInvalid)
	if !strings.Contains(err.Error(), "active branch") {
		t.Fatalf("off-branch error = %v", err)
	}
	// On a branched session the page is the branch's.
	if p, _, _, err := st.HistoryAround(ctx, s.ID, hit.ID, 4); err != nil || Texts(p) != "a9,u10,t:10,a10,u11" {
		t.Fatalf("around u10, branched = %q err=%v", Texts(p), err)
	}
}

// Package storetest is the conformance suite of the core.Store port: what
// every Store must do, independent of how it keeps the record. storage runs
// it against SQLite; a second backend (a shared PostgreSQL record for a
// team, say) is proven by running it too:
//
//	func TestStoreConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) core.Store { return openMine(t) })
//	}
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Open returns a new, empty Store for one subtest; the suite closes it.
type Open func(t *testing.T) core.Store

// Run runs every part of the suite, each on a fresh Store.
func Run(t *testing.T, open Open) {
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, st core.Store)
	}{
		{"sessions", testSessions},
		{"list", testList},
		{"append", testAppend},
		{"validation", testValidation},
		{"native-ids", testNativeIDs},
		{"branches", testBranches},
		{"history", testHistory},
		{"history-forward", testHistoryForward},
		{"history-forward-branched", testHistoryForwardBranched},
		{"history-around", testHistoryAround},
		{"audit", testAudit},
		{"update-all-or-nothing", testUpdate},
		{"previews", testPreviews},
		{"preview-claimed-once", testPreviewClaimedOnce},
		{"attachments", testAttachments},
		{"schema-and-integrity", testSchemaAndIntegrity},
		{"window", testWindow},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := open(t)
			t.Cleanup(func() { _ = st.Close() })
			c.fn(t, st)
		})
	}
}

var ctx = context.Background()

func user(text string) core.NewEntry {
	return core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(core.UserMessagePayload{Text: text})}
}

func assistant(text string) core.NewEntry {
	return core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(core.AssistantMessagePayload{Text: text})}
}

func tool(id string) core.NewEntry {
	return core.NewEntry{Kind: core.KindToolStarted, Payload: core.Payload(core.ToolStartedPayload{ToolID: id})}
}

func newSession(t *testing.T, st core.Store, harness string) core.Session {
	t.Helper()
	s, err := st.CreateSession(ctx, core.Session{Harness: harness, Cwd: "/w"})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return s
}

// MustAppend appends es to session sid and fails the test on an error.
func MustAppend(t testing.TB, w core.Writer, sid string, es ...core.NewEntry) []core.Entry {
	t.Helper()
	out, err := w.Append(ctx, sid, es...)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return out
}

// Texts renders entries as "u1,a1,t:x" for comparisons: an entry's text,
// "t:"+its tool id, or its kind.
func Texts(es []core.Entry) string {
	var parts []string
	for _, e := range es {
		var p map[string]any
		_ = json.Unmarshal(e.Payload, &p)
		switch {
		case p["text"] != nil:
			parts = append(parts, fmt.Sprint(p["text"]))
		case p["toolId"] != nil:
			parts = append(parts, "t:"+fmt.Sprint(p["toolId"]))
		default:
			parts = append(parts, string(e.Kind))
		}
	}
	return strings.Join(parts, ",")
}

// WantCode fails the test unless err carries code.
func WantCode(t testing.TB, err error, code core.Code) {
	t.Helper()
	if got := core.ErrorCode(err); err == nil || got != code {
		t.Fatalf("want a %s error, got %v (%s)", code, err, got)
	}
}

func branch(t *testing.T, st core.Store, sid string) []core.Entry {
	t.Helper()
	br, err := st.ActiveBranch(ctx, sid)
	if err != nil {
		t.Fatalf("ActiveBranch: %v", err)
	}
	return br
}

func testSessions(t *testing.T, st core.Store) {
	s, err := st.CreateSession(ctx, core.Session{Harness: "codex", Cwd: "/w", Title: "t", Preset: "p", Model: "m", Effort: "high",
		NativeSessionID: "n-1"})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID == "" || s.CreatedAt.IsZero() || s.UpdatedAt.IsZero() {
		t.Fatalf("CreateSession did not fill id and times: %+v", s)
	}
	got, err := st.GetSession(ctx, s.ID)
	if err != nil || got.Harness != "codex" || got.Title != "t" || got.Preset != "p" || got.Model != "m" || got.Effort != "high" ||
		got.NativeSessionID != "n-1" || got.Archived {
		t.Fatalf("GetSession = %+v, %v", got, err)
	}
	p, err := st.PatchSession(ctx, s.ID, core.SessionPatch{Title: core.Ptr("renamed"), Archived: core.Ptr(true),
		RestoreMode: core.Ptr(string(core.ModeNative))})
	if err != nil || p.Title != "renamed" || !p.Archived || p.RestoreMode != string(core.ModeNative) || p.Model != "m" {
		t.Fatalf("PatchSession = %+v, %v", p, err)
	}
	if p.UpdatedAt.Before(s.UpdatedAt) {
		t.Fatalf("PatchSession moved updatedAt back: %v < %v", p.UpdatedAt, s.UpdatedAt)
	}
	if f, err := st.FindSessionByNative(ctx, "codex", "n-1"); err != nil || f.ID != s.ID {
		t.Fatalf("FindSessionByNative = %+v, %v", f, err)
	}
	_, err = st.FindSessionByNative(ctx, "claude-code", "n-1")
	WantCode(t, err, core.CodeNotFound)
	_, err = st.GetSession(ctx, "s_missing")
	WantCode(t, err, core.CodeNotFound)
	if !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a missing session does not wrap ErrNotFound: %v", err)
	}
	_, err = st.PatchSession(ctx, "s_missing", core.SessionPatch{Title: core.Ptr("x")})
	WantCode(t, err, core.CodeNotFound)
	// A caller may choose the id.
	if c, err := st.CreateSession(ctx, core.Session{ID: "s_chosen", Harness: "fake"}); err != nil || c.ID != "s_chosen" {
		t.Fatalf("CreateSession with an id = %+v, %v", c, err)
	}
}

func testList(t *testing.T, st core.Store) {
	var ids []string
	for i := range 7 {
		h := "codex"
		if i%2 == 1 {
			h = "claude-code"
		}
		s := newSession(t, st, h)
		ids = append(ids, s.ID)
		// Distinct update times, newest last.
		time.Sleep(2 * time.Millisecond)
		MustAppend(t, st, s.ID, user(fmt.Sprint(i)))
	}
	if _, err := st.PatchSession(ctx, ids[0], core.SessionPatch{Archived: core.Ptr(true)}); err != nil {
		t.Fatal(err)
	}
	// Pages of 3, most recently updated first, archived left out.
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := st.ListSessions(ctx, core.ListQuery{Cursor: cursor, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 || pages > 5 {
			t.Fatalf("page of %d sessions (limit 3), or paging does not end", len(page))
		}
		for _, s := range page {
			got = append(got, s.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	// ids[0] was archived last, so it is the most recent but hidden.
	want := []string{ids[6], ids[5], ids[4], ids[3], ids[2], ids[1]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ListSessions = %v, want %v", got, want)
	}
	all, _, err := st.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
	if err != nil || len(all) != 7 || all[0].ID != ids[0] {
		t.Fatalf("ListSessions(IncludeArchived) = %d sessions, first %v, %v", len(all), all, err)
	}
	codex, _, err := st.ListSessions(ctx, core.ListQuery{Harness: "claude-code"})
	if err != nil || len(codex) != 3 {
		t.Fatalf("ListSessions(Harness) = %d sessions, %v", len(codex), err)
	}
	for _, s := range codex {
		if s.Harness != "claude-code" {
			t.Fatalf("harness filter let %s through", s.Harness)
		}
	}
}

func testAppend(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	first := MustAppend(t, st, s.ID, user("u1"), assistant("a1"))
	second := MustAppend(t, st, s.ID, tool("x"))
	if len(first) != 2 || first[0].ParentID != "" || first[1].ParentID != first[0].ID || second[0].ParentID != first[1].ID {
		t.Fatalf("Append does not chain under the head: %+v %+v", first, second)
	}
	if first[0].Seq != 1 || first[1].Seq != 2 || second[0].Seq != 3 {
		t.Fatalf("seqs %d %d %d, want 1 2 3", first[0].Seq, first[1].Seq, second[0].Seq)
	}
	for _, e := range append(first, second...) {
		if e.ID == "" || e.SessionID != s.ID || e.CreatedAt.IsZero() {
			t.Fatalf("entry not filled: %+v", e)
		}
	}
	got, _ := st.GetSession(ctx, s.ID)
	if got.HeadID != second[0].ID {
		t.Fatalf("head %s, want %s", got.HeadID, second[0].ID)
	}
	e, err := st.GetEntry(ctx, first[1].ID)
	if err != nil || e.ID != first[1].ID || e.Kind != core.KindAssistantMessage || Texts([]core.Entry{e}) != "a1" {
		t.Fatalf("GetEntry = %+v, %v", e, err)
	}
	_, err = st.GetEntry(ctx, "e_missing")
	WantCode(t, err, core.CodeNotFound)
	_, err = st.Append(ctx, "s_missing", user("x"))
	WantCode(t, err, core.CodeNotFound)
	if Texts(branch(t, st, s.ID)) != "u1,a1,t:x" {
		t.Fatalf("branch = %q", Texts(branch(t, st, s.ID)))
	}
}

func testValidation(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	for _, c := range []core.NewEntry{
		{Kind: "made.up", Payload: json.RawMessage(`{}`)},
		{Kind: core.KindUserMessage, Payload: json.RawMessage(`{"txt":"x"}`)},
		{Kind: core.KindUserMessage, Payload: json.RawMessage(`["text"]`)},
		{Kind: core.KindUserMessage},
	} {
		_, err := st.Append(ctx, s.ID, c)
		WantCode(t, err, core.CodeInvalid)
	}
	// One bad entry fails the whole call.
	_, err := st.Append(ctx, s.ID, user("ok"), core.NewEntry{Kind: core.KindToolStarted, Payload: json.RawMessage(`{}`)})
	WantCode(t, err, core.CodeInvalid)
	if br := branch(t, st, s.ID); len(br) != 0 {
		t.Fatalf("%d entries written despite validation errors", len(br))
	}
}

func testNativeIDs(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	with := func(e core.NewEntry, n string) core.NewEntry { e.NativeID = n; return e }
	first := MustAppend(t, st, s.ID, with(user("u1"), "n1"), with(assistant("a1"), "n2"))
	again := MustAppend(t, st, s.ID, with(user("u1"), "n1"), with(assistant("a1"), "n2"), with(user("u2"), "n3"))
	if len(again) != 1 || again[0].NativeID != "n3" || again[0].ParentID != first[1].ID {
		t.Fatalf("entries with known native ids were not skipped: %+v", again)
	}
	o := newSession(t, st, "fake")
	if got := MustAppend(t, st, o.ID, with(user("u1"), "n1")); len(got) != 1 {
		t.Fatal("native ids are not per session")
	}
	if Texts(branch(t, st, s.ID)) != "u1,a1,u2" {
		t.Fatalf("branch = %q", Texts(branch(t, st, s.ID)))
	}
}

func testBranches(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	main := MustAppend(t, st, s.ID, user("u1"), assistant("a1"), user("u2"), assistant("a2"))
	// A branch from a1.
	alt, err := st.AppendTo(ctx, s.ID, main[1].ID, user("v2"), assistant("b2"))
	if err != nil {
		t.Fatal(err)
	}
	if alt[0].ParentID != main[1].ID {
		t.Fatalf("AppendTo parent %s, want %s", alt[0].ParentID, main[1].ID)
	}
	if Texts(branch(t, st, s.ID)) != "u1,a1,v2,b2" {
		t.Fatalf("active branch after AppendTo = %q", Texts(branch(t, st, s.ID)))
	}
	// Appending follows the head, on the new branch.
	MustAppend(t, st, s.ID, user("v3"))
	if Texts(branch(t, st, s.ID)) != "u1,a1,v2,b2,v3" {
		t.Fatalf("active branch = %q", Texts(branch(t, st, s.ID)))
	}
	// Moving the head switches back.
	if err := st.MoveHead(ctx, s.ID, main[3].ID); err != nil {
		t.Fatal(err)
	}
	if Texts(branch(t, st, s.ID)) != "u1,a1,u2,a2" {
		t.Fatalf("active branch after MoveHead = %q", Texts(branch(t, st, s.ID)))
	}
	WantCode(t, st.MoveHead(ctx, s.ID, "e_missing"), core.CodeNotFound)
	o := newSession(t, st, "fake")
	other := MustAppend(t, st, o.ID, user("elsewhere"))
	WantCode(t, st.MoveHead(ctx, s.ID, other[0].ID), core.CodeInvalid)
	_, err = st.AppendTo(ctx, s.ID, other[0].ID, user("x"))
	WantCode(t, err, core.CodeInvalid)
}

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

func testAudit(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	for i, kind := range []string{"checkpoint.evidence_verified", "migration.executed", "checkpoint.evidence_verified"} {
		if err := st.AppendAudit(ctx, core.AuditRecord{Source: "test", Kind: kind, Entity: s.ID,
			Body: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AppendAudit(ctx, core.AuditRecord{Source: "test", Kind: "other", Entity: "s_else"}); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Audit(ctx, s.ID, "checkpoint.evidence_verified")
	if err != nil || len(recs) != 2 {
		t.Fatalf("Audit(entity, kind) = %d records, %v", len(recs), err)
	}
	if string(recs[0].Body) != `{"n":0}` || string(recs[1].Body) != `{"n":2}` || recs[0].Time.IsZero() {
		t.Fatalf("audit records out of order or unfilled: %+v", recs)
	}
	if all, err := st.Audit(ctx, "", ""); err != nil || len(all) != 4 {
		t.Fatalf("Audit() = %d records, %v", len(all), err)
	}
	WantCode(t, st.AppendAudit(ctx, core.AuditRecord{Kind: "k", Body: json.RawMessage(`{`)}), core.CodeInvalid)
}

func testUpdate(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	MustAppend(t, st, s.ID, user("before"))
	boom := errors.New("boom")
	var created string
	err := st.Update(ctx, func(w core.Writer) error {
		ns, err := w.CreateSession(ctx, core.Session{Harness: "codex"})
		if err != nil {
			return err
		}
		created = ns.ID
		MustAppend(t, w, s.ID, user("in tx"))
		if _, err := w.PatchSession(ctx, s.ID, core.SessionPatch{Title: core.Ptr("changed")}); err != nil {
			return err
		}
		if err := w.AppendAudit(ctx, core.AuditRecord{Source: "t", Kind: "x", Entity: s.ID}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want boom", err)
	}
	_, err = st.GetSession(ctx, created)
	WantCode(t, err, core.CodeNotFound)
	got, _ := st.GetSession(ctx, s.ID)
	aud, _ := st.Audit(ctx, "", "")
	if got.Title != "" || Texts(branch(t, st, s.ID)) != "before" || len(aud) != 0 {
		t.Fatalf("a failed Update left writes: title %q, branch %q, %d audit records", got.Title, Texts(branch(t, st, s.ID)), len(aud))
	}
	err = st.Update(ctx, func(w core.Writer) error {
		MustAppend(t, w, s.ID, user("u"), assistant("a"))
		_, err := w.PatchSession(ctx, s.ID, core.SessionPatch{Title: core.Ptr("t")})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = st.GetSession(ctx, s.ID)
	if br := branch(t, st, s.ID); got.Title != "t" || Texts(br) != "before,u,a" || got.HeadID != br[2].ID {
		t.Fatalf("a committed Update: title %q, branch %q", got.Title, Texts(br))
	}
}

func testPreviews(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := core.Preview{ID: "p_1", SourceSessionID: s.ID, Target: core.MigrationTarget{Harness: "codex", Model: "m", Effort: "high"},
		Lang: "zh", Path: "/d/previews/p_1.md", Summary: "## Goal\n…", Extra: json.RawMessage(`{"k":[1,2]}`), CreatedAt: at}
	if err := st.SavePreview(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetPreview(ctx, "p_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != p.ID || got.SourceSessionID != s.ID || got.Target != p.Target || got.Lang != "zh" || got.Path != p.Path ||
		got.Summary != p.Summary || !got.CreatedAt.Equal(at) || !got.ExecutedAt.IsZero() {
		t.Fatalf("GetPreview = %+v, want %+v", got, p)
	}
	var extra map[string][]int
	if err := json.Unmarshal(got.Extra, &extra); err != nil || fmt.Sprint(extra["k"]) != "[1 2]" {
		t.Fatalf("Extra = %s, %v", got.Extra, err)
	}
	_, err = st.GetPreview(ctx, "p_missing")
	WantCode(t, err, core.CodeNotFound)
	WantCode(t, st.ClaimPreview(ctx, "p_missing", at), core.CodeNotFound)

	if err := st.ClaimPreview(ctx, "p_1", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetPreview(ctx, "p_1"); !got.ExecutedAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("ExecutedAt = %v", got.ExecutedAt)
	}
	WantCode(t, st.ClaimPreview(ctx, "p_1", at.Add(2*time.Minute)), core.CodeConflict)
	if err := st.ReleasePreview(ctx, "p_1"); err != nil {
		t.Fatal(err)
	}
	if err := st.ClaimPreview(ctx, "p_1", at.Add(3*time.Minute)); err != nil {
		t.Fatalf("a released preview cannot be claimed: %v", err)
	}
}

func testPreviewClaimedOnce(t *testing.T, st core.Store) {
	s := newSession(t, st, "fake")
	for trial := range 5 {
		id := fmt.Sprintf("p_race%d", trial)
		if err := st.SavePreview(ctx, core.Preview{ID: id, SourceSessionID: s.ID, Summary: "x"}); err != nil {
			t.Fatal(err)
		}
		const n = 8
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins, conflicts := 0, 0
		start := make(chan struct{})
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := st.ClaimPreview(ctx, id, time.Now())
				mu.Lock()
				defer mu.Unlock()
				switch core.ErrorCode(err) {
				case core.CodeConflict:
					conflicts++
				default:
					if err == nil {
						wins++
					} else {
						t.Errorf("ClaimPreview: %v", err)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins != 1 || conflicts != n-1 {
			t.Fatalf("trial %d: %d claims won and %d conflicted, want 1 and %d", trial, wins, conflicts, n-1)
		}
	}
}

func testAttachments(t *testing.T, st core.Store) {
	data := []byte("\x89PNG\r\n\x1a\nfake image bytes")
	a := core.Attachment{SHA256: strings.Repeat("ab", 32), MediaType: "image/png", Bytes: len(data)}
	for range 2 { // storing the same content again changes nothing
		if err := st.PutAttachment(ctx, a, data); err != nil {
			t.Fatal(err)
		}
	}
	got, b, err := st.GetAttachment(ctx, a.SHA256)
	if err != nil || string(b) != string(data) || got.MediaType != "image/png" || got.Bytes != len(data) || got.SHA256 != a.SHA256 {
		t.Fatalf("GetAttachment = %+v %q %v", got, b, err)
	}
	_, _, err = st.GetAttachment(ctx, strings.Repeat("cd", 32))
	WantCode(t, err, core.CodeNotFound)
	WantCode(t, st.PutAttachment(ctx, core.Attachment{SHA256: "short", MediaType: "image/png"}, data), core.CodeInvalid)
}

func testSchemaAndIntegrity(t *testing.T, st core.Store) {
	if v, err := st.SchemaVersion(ctx); err != nil || v < 1 {
		t.Fatalf("SchemaVersion = %d, %v", v, err)
	}
	s := newSession(t, st, "fake")
	MustAppend(t, st, s.ID, user("u"), assistant("a"))
	rep, err := st.Integrity(ctx)
	if err != nil || !rep.Clean() {
		t.Fatalf("Integrity of a sound record = %+v, %v", rep, err)
	}
}

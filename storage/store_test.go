package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

func user(text string) core.NewEntry {
	return core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(map[string]string{"text": text})}
}

func assistant(text string) core.NewEntry {
	return core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(map[string]string{"text": text})}
}

func tool(id string) core.NewEntry {
	return core.NewEntry{Kind: core.KindToolStarted, Payload: core.Payload(map[string]string{"toolId": id})}
}

// turnEntries returns n entries (n a multiple of 5) shaped like turns: a
// question, a tool call and its result, a context reading, an answer.
func turnEntries(n int) []core.NewEntry {
	out := make([]core.NewEntry, 0, n)
	for len(out) < n {
		out = append(out, user("question"), tool("t1"),
			core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]string{"toolId": "t1"})},
			core.NewEntry{Kind: core.KindContextUsage, Payload: core.Payload(map[string]int{"used": 1000})},
			assistant("answer"))
	}
	return out
}

func newSession(t testing.TB, db *storage.DB) core.Session {
	t.Helper()
	s, err := db.CreateSession(context.Background(), core.Session{Harness: "claude-code", Cwd: "/w"})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return s
}

func mustAppend(t testing.TB, db core.Writer, sid string, es ...core.NewEntry) []core.Entry {
	t.Helper()
	return storetest.MustAppend(t, db, sid, es...)
}

func texts(es []core.Entry) string { return storetest.Texts(es) }

func wantCode(t *testing.T, err error, code core.Code) {
	t.Helper()
	storetest.WantCode(t, err, code)
}

func TestSessionCreateGetPatchList(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	if !strings.HasPrefix(s.ID, "s_") || len(s.ID) != 28 {
		t.Fatalf("session id %q: want s_ + 26 chars", s.ID)
	}
	got, err := db.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got != s {
		t.Fatalf("GetSession = %+v, want %+v", got, s)
	}
	p, err := db.PatchSession(ctx, s.ID, core.SessionPatch{Model: core.Ptr("opus"), NativeSessionID: core.Ptr("n-1"),
		Archived: core.Ptr(false), RestoreMode: core.Ptr(string(core.ModeNative))})
	if err != nil {
		t.Fatal(err)
	}
	if p.Model != "opus" || p.NativeSessionID != "n-1" || p.RestoreMode != string(core.ModeNative) || p.Title != "" {
		t.Fatalf("patched = %+v", p)
	}
	if !p.UpdatedAt.After(s.UpdatedAt) {
		t.Fatalf("PatchSession did not bump updated_at: %v -> %v", s.UpdatedAt, p.UpdatedAt)
	}
	if got, _ := db.GetSession(ctx, s.ID); got != p {
		t.Fatalf("GetSession after patch = %+v, want %+v", got, p)
	}
	f, err := db.FindSessionByNative(ctx, "claude-code", "n-1")
	if err != nil || f.ID != s.ID {
		t.Fatalf("FindSessionByNative = %v, %v", f.ID, err)
	}
	if _, err := db.FindSessionByNative(ctx, "codex", "n-1"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("FindSessionByNative other harness: %v", err)
	}
	if _, err := db.GetSession(ctx, "s_nope"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("GetSession missing: %v", err)
	}
	if _, err := db.PatchSession(ctx, "s_nope", core.SessionPatch{}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("PatchSession missing: %v", err)
	}
	_, err = db.CreateSession(ctx, core.Session{ID: s.ID, Harness: "x"})
	wantCode(t, err, core.CodeConflict)

	// Paging: 7 sessions (s is the oldest update but was patched, so it
	// is touched again below to fix the order).
	ids := []string{s.ID}
	for i := 0; i < 6; i++ {
		ids = append(ids, newSession(t, db).ID)
	}
	if _, err := db.PatchSession(ctx, ids[2], core.SessionPatch{Archived: core.Ptr(true)}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, db, ids[0], user("bump")) // ids[0] is now the most recent
	want := []string{ids[0], ids[6], ids[5], ids[4], ids[3], ids[1]}
	var seen []string
	cursor := ""
	pages := 0
	for {
		page, next, err := db.ListSessions(ctx, core.ListQuery{Cursor: cursor, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, x := range page {
			seen = append(seen, x.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if pages != 2 || strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Fatalf("ListSessions pages=%d order=%v, want 2 pages %v", pages, seen, want)
	}
	all, _, err := db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
	if err != nil || len(all) != 7 {
		t.Fatalf("ListSessions with archived: %d, %v", len(all), err)
	}
	none, _, err := db.ListSessions(ctx, core.ListQuery{Harness: "codex"})
	if err != nil || len(none) != 0 {
		t.Fatalf("ListSessions harness filter: %d, %v", len(none), err)
	}
	_, _, err = db.ListSessions(ctx, core.ListQuery{Cursor: "!!"})
	wantCode(t, err, core.CodeInvalid)
}

func TestAppendBranchMoveHead(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	a := mustAppend(t, db, s.ID, user("u1"), assistant("a1"))
	if len(a) != 2 || a[0].Seq != 1 || a[1].Seq != 2 || a[0].ParentID != "" || a[1].ParentID != a[0].ID {
		t.Fatalf("first chain wrong: %+v", a)
	}
	if !strings.HasPrefix(a[0].ID, "e_") || len(a[0].ID) != 28 {
		t.Fatalf("entry id %q: want e_ + 26 chars", a[0].ID)
	}
	b := mustAppend(t, db, s.ID, user("u2"), assistant("a2"))
	if b[0].ParentID != a[1].ID {
		t.Fatalf("append did not chain under the head")
	}
	got, err := db.GetSession(ctx, s.ID)
	if err != nil || got.HeadID != b[1].ID {
		t.Fatalf("head = %q, want %q (%v)", got.HeadID, b[1].ID, err)
	}
	e, err := db.GetEntry(ctx, b[0].ID)
	if err != nil || e.Seq != 3 || e.Kind != core.KindUserMessage || string(e.Payload) != `{"text":"u2"}` || !e.CreatedAt.Equal(b[0].CreatedAt) {
		t.Fatalf("GetEntry = %+v, %v", e, err)
	}

	// Branch from a1: u2' and a2' become the active branch.
	c, err := db.AppendTo(ctx, s.ID, a[1].ID, user("u2'"), assistant("a2'"))
	if err != nil {
		t.Fatal(err)
	}
	if c[0].ParentID != a[1].ID || c[0].Seq != 5 {
		t.Fatalf("branch entry = %+v", c[0])
	}
	br, err := db.ActiveBranch(ctx, s.ID)
	if err != nil || texts(br) != "u1,a1,u2',a2'" {
		t.Fatalf("ActiveBranch = %q, %v", texts(br), err)
	}
	// Switch back to the first branch.
	if err := db.MoveHead(ctx, s.ID, b[1].ID); err != nil {
		t.Fatal(err)
	}
	br, err = db.ActiveBranch(ctx, s.ID)
	if err != nil || texts(br) != "u1,a1,u2,a2" {
		t.Fatalf("ActiveBranch after MoveHead = %q, %v", texts(br), err)
	}
	h, more, err := db.History(ctx, s.ID, 0, 0)
	if err != nil || more || texts(h) != "u1,a1,u2,a2" {
		t.Fatalf("History after MoveHead = %q more=%v %v", texts(h), more, err)
	}
	// Paging before seq 5 on a branched session skips the other branch.
	h, _, err = db.History(ctx, s.ID, 5, 0)
	if err != nil || texts(h) != "u1,a1,u2,a2" {
		t.Fatalf("History(before 5) = %q, %v", texts(h), err)
	}
	h, _, err = db.History(ctx, s.ID, 4, 0)
	if err != nil || texts(h) != "u1,a1,u2" {
		t.Fatalf("History(before 4) = %q, %v", texts(h), err)
	}

	// Errors.
	other := newSession(t, db)
	o := mustAppend(t, db, other.ID, user("elsewhere"))
	_, err = db.AppendTo(ctx, s.ID, o[0].ID, user("x"))
	wantCode(t, err, core.CodeInvalid)
	_, err = db.AppendTo(ctx, s.ID, "e_missing", user("x"))
	wantCode(t, err, core.CodeInvalid)
	wantCode(t, db.MoveHead(ctx, s.ID, o[0].ID), core.CodeInvalid)
	if err := db.MoveHead(ctx, s.ID, "e_missing"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("MoveHead missing entry: %v", err)
	}
	if _, err := db.Append(ctx, "s_missing", user("x")); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Append to missing session: %v", err)
	}
	if _, err := db.GetEntry(ctx, "e_missing"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("GetEntry missing: %v", err)
	}
	if _, _, err := db.History(ctx, "s_missing", 0, 0); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("History missing session: %v", err)
	}
	// Caller-chosen ids are kept; reusing one is a conflict.
	mine, err := db.Append(ctx, s.ID, core.NewEntry{ID: "e_mine", Kind: core.KindBranchSummary, Payload: core.Payload(map[string]string{"summary": "s"})})
	if err != nil || mine[0].ID != "e_mine" {
		t.Fatalf("caller id: %+v %v", mine, err)
	}
	_, err = db.Append(ctx, s.ID, core.NewEntry{ID: "e_mine", Kind: core.KindBranchSummary, Payload: core.Payload(map[string]string{"summary": "s"})})
	wantCode(t, err, core.CodeConflict)
	rep, err := db.Integrity(ctx)
	if err != nil || !rep.Clean() || rep.SessionsChecked != 2 || rep.EntriesChecked != 8 {
		t.Fatalf("Integrity = %+v, %v", rep, err)
	}
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	cases := []core.NewEntry{
		{Kind: "made.up", Payload: json.RawMessage(`{}`)},
		{Kind: core.KindUserMessage, Payload: json.RawMessage(`{"txt":"x"}`)},
		{Kind: core.KindUserMessage, Payload: json.RawMessage(`["text"]`)},
		{Kind: core.KindUserMessage, Payload: json.RawMessage(`not json`)},
		{Kind: core.KindUserMessage},
	}
	for _, c := range cases {
		_, err := db.Append(ctx, s.ID, c)
		wantCode(t, err, core.CodeInvalid)
	}
	// One bad entry fails the whole call: nothing of it is written.
	_, err := db.Append(ctx, s.ID, user("ok"), core.NewEntry{Kind: core.KindToolStarted, Payload: json.RawMessage(`{}`)})
	wantCode(t, err, core.CodeInvalid)
	if !strings.Contains(err.Error(), `"toolId"`) {
		t.Fatalf("error does not name the missing field: %v", err)
	}
	_, err = db.AppendTo(ctx, s.ID, "", core.NewEntry{Kind: "made.up", Payload: json.RawMessage(`{}`)})
	wantCode(t, err, core.CodeInvalid)
	wantCode(t, db.AppendAudit(ctx, core.AuditRecord{Kind: "k", Body: json.RawMessage(`{`)}), core.CodeInvalid)
	br, err := db.ActiveBranch(ctx, s.ID)
	if err != nil || len(br) != 0 {
		t.Fatalf("entries written despite validation errors: %d %v", len(br), err)
	}
}

func TestNativeIDDedup(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	withNative := func(e core.NewEntry, n string) core.NewEntry { e.NativeID = n; return e }
	first := mustAppend(t, db, s.ID, withNative(user("u1"), "n1"), withNative(assistant("a1"), "n2"))
	again := mustAppend(t, db, s.ID, withNative(user("u1"), "n1"), withNative(assistant("a1"), "n2"), withNative(user("u2"), "n3"),
		withNative(user("u2 dup in same call"), "n3"))
	if len(again) != 1 || again[0].NativeID != "n3" || again[0].ParentID != first[1].ID || again[0].Seq != 3 {
		t.Fatalf("dedup result = %+v", again)
	}
	none := mustAppend(t, db, s.ID, withNative(user("u1"), "n1"))
	if len(none) != 0 {
		t.Fatalf("all-duplicate append returned %d entries", len(none))
	}
	// The same native id in another session is a different entry.
	o := newSession(t, db)
	if got := mustAppend(t, db, o.ID, withNative(user("u1"), "n1")); len(got) != 1 {
		t.Fatalf("native id dedup leaked across sessions")
	}
	br, _ := db.ActiveBranch(ctx, s.ID)
	if texts(br) != "u1,a1,u2" {
		t.Fatalf("branch = %q", texts(br))
	}
}

func TestUnknownKindReadBack(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	a := mustAppend(t, db, s.ID, user("u1"))
	// A newer Bridge wrote a kind this one does not know.
	if _, err := db.SQL().ExecContext(ctx, `INSERT INTO entries (id, session_id, parent_id, seq, kind, payload, created_at)
		VALUES ('e_future', ?, ?, 2, 'hologram.projected', '{"beam":1}', 0)`, s.ID, a[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, `UPDATE sessions SET head_id = 'e_future' WHERE id = ?`, s.ID); err != nil {
		t.Fatal(err)
	}
	e, err := db.GetEntry(ctx, "e_future")
	if err != nil || e.Kind != "hologram.projected" || e.Kind.Known() || string(e.Payload) != `{"beam":1}` {
		t.Fatalf("GetEntry unknown kind = %+v, %v", e, err)
	}
	h, _, err := db.History(ctx, s.ID, 0, 0)
	if err != nil || len(h) != 2 || h[1].Kind != "hologram.projected" {
		t.Fatalf("History with unknown kind = %+v, %v", h, err)
	}
	// Appending after it works; appending such a kind does not.
	if _, err := db.Append(ctx, s.ID, user("u2")); err != nil {
		t.Fatal(err)
	}
	_, err = db.Append(ctx, s.ID, core.NewEntry{Kind: "hologram.projected", Payload: json.RawMessage(`{"beam":1}`)})
	wantCode(t, err, core.CodeInvalid)
}

func TestAudit(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	for i, k := range []string{"checkpoint.evidence_verified", "compaction.failed", "checkpoint.evidence_verified"} {
		ent := "s_a"
		if i == 1 {
			ent = "s_b"
		}
		if err := db.AppendAudit(ctx, core.AuditRecord{Source: "test", Kind: k, Entity: ent, Body: core.Payload(map[string]int{"i": i})}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := db.Audit(ctx, "", "")
	if err != nil || len(all) != 3 || all[0].ID >= all[1].ID || all[2].Time.IsZero() || string(all[1].Body) != `{"i":1}` {
		t.Fatalf("Audit all = %+v, %v", all, err)
	}
	a, _ := db.Audit(ctx, "s_a", "")
	b, _ := db.Audit(ctx, "", "compaction.failed")
	c, _ := db.Audit(ctx, "s_a", "compaction.failed")
	if len(a) != 2 || len(b) != 1 || b[0].Entity != "s_b" || len(c) != 0 {
		t.Fatalf("Audit filters: %d %d %d", len(a), len(b), len(c))
	}
}

func TestUpdateAllOrNothing(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("before"))
	boom := errors.New("boom")
	var created string
	err := db.Update(ctx, func(w core.Writer) error {
		ns, err := w.CreateSession(ctx, core.Session{Harness: "codex"})
		if err != nil {
			return err
		}
		created = ns.ID
		if _, err := w.Append(ctx, s.ID, user("in tx"), assistant("in tx")); err != nil {
			return err
		}
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
	if _, err := db.GetSession(ctx, created); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("session created in a rolled-back Update exists: %v", err)
	}
	got, _ := db.GetSession(ctx, s.ID)
	br, _ := db.ActiveBranch(ctx, s.ID)
	aud, _ := db.Audit(ctx, "", "")
	if got.Title != "" || texts(br) != "before" || len(aud) != 0 {
		t.Fatalf("rolled-back Update left writes: title=%q branch=%q audit=%d", got.Title, texts(br), len(aud))
	}

	// A failing write inside fn also leaves nothing when fn gives up.
	err = db.Update(ctx, func(w core.Writer) error {
		if _, err := w.Append(ctx, s.ID, user("x")); err != nil {
			return err
		}
		_, err := w.Append(ctx, "s_missing", user("y"))
		return err
	})
	if !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Update = %v", err)
	}
	if br, _ := db.ActiveBranch(ctx, s.ID); texts(br) != "before" {
		t.Fatalf("partial Update kept: %q", texts(br))
	}

	// Success commits everything.
	var leaked core.Writer
	err = db.Update(ctx, func(w core.Writer) error {
		leaked = w
		if _, err := w.Append(ctx, s.ID, user("u"), assistant("a")); err != nil {
			return err
		}
		_, err := w.PatchSession(ctx, s.ID, core.SessionPatch{Title: core.Ptr("t")})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = db.GetSession(ctx, s.ID)
	br, _ = db.ActiveBranch(ctx, s.ID)
	if got.Title != "t" || texts(br) != "before,u,a" || got.HeadID != br[2].ID {
		t.Fatalf("committed Update: title=%q branch=%q", got.Title, texts(br))
	}
	if _, err := leaked.Append(ctx, s.ID, user("late")); err == nil {
		t.Fatalf("writer used after Update returned: no error")
	}
}

func TestConcurrentAppendsGroupCommit(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	const goroutines, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				e := user(fmt.Sprintf("g%d-%d", g, i))
				if i%10 == 5 {
					// An invalid entry fails only its own call.
					e = core.NewEntry{Kind: core.KindUserMessage, Payload: json.RawMessage(`{}`)}
					if _, err := db.Append(ctx, s.ID, e); core.ErrorCode(err) != core.CodeInvalid {
						errs <- fmt.Errorf("invalid entry: got %v", err)
					}
					// A call to a missing session fails alone too (inside the group).
					if _, err := db.Append(ctx, "s_missing", user("x")); !errors.Is(err, core.ErrNotFound) {
						errs <- fmt.Errorf("missing session: got %v", err)
					}
					continue
				}
				out, err := db.Append(ctx, s.ID, e)
				if err != nil || len(out) != 1 {
					errs <- fmt.Errorf("append: %v", err)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	br, err := db.ActiveBranch(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := goroutines * (each - each/10)
	if len(br) != want {
		t.Fatalf("branch has %d entries, want %d", len(br), want)
	}
	for i, e := range br {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
}

func TestCancelledWriteIsNotApplied(t *testing.T) {
	db := storagetest.Open(t)
	s := newSession(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := db.Append(ctx, s.ID, user("never"))
	wantCode(t, err, core.CodeCancelled)
	if br, _ := db.ActiveBranch(context.Background(), s.ID); len(br) != 0 {
		t.Fatalf("cancelled append was written")
	}
}

func TestWaitingAppendsShareOneTransaction(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	release := make(chan struct{})
	holding := make(chan struct{})
	updErr := make(chan error, 1)
	// Hold the write lock so that every Append below has to queue.
	go func() {
		updErr <- db.Update(ctx, func(core.Writer) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	g0, c0 := storage.GroupStats(db)
	q0 := storage.Queued(db)
	const n = 10
	type result struct {
		i   int
		out []core.Entry
		err error
	}
	results := make(chan result, n+1)
	for i := 0; i < n; i++ {
		go func(i int) {
			out, err := db.Append(ctx, s.ID, user(fmt.Sprintf("q%d", i)))
			results <- result{i, out, err}
		}(i)
	}
	go func() {
		_, err := db.Append(ctx, "s_missing", user("lost"))
		results <- result{-1, nil, err}
	}()
	// Wait until all n+1 calls are handed over: the writer holds the first
	// group and waits for the lock; the rest sit in the queue.
	for {
		g, c := storage.GroupStats(db)
		if g != g0 || c != c0 {
			t.Fatal("a write ran while the lock was held")
		}
		if storage.Queued(db)-q0 == n+1 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	if err := <-updErr; err != nil {
		t.Fatal(err)
	}
	seqs := map[int64]bool{}
	for i := 0; i < n+1; i++ {
		r := <-results
		if r.i < 0 {
			if !errors.Is(r.err, core.ErrNotFound) {
				t.Errorf("append to missing session in the group: %v", r.err)
			}
			continue
		}
		if r.err != nil || len(r.out) != 1 {
			t.Fatalf("append %d: %v", r.i, r.err)
		}
		seqs[r.out[0].Seq] = true
	}
	g, c := storage.GroupStats(db)
	if c-c0 != n+1 || g-g0 > 2 {
		t.Fatalf("%d calls ran in %d transactions; want %d calls in at most 2", c-c0, g-g0, n+1)
	}
	br, err := db.ActiveBranch(ctx, s.ID)
	if err != nil || len(br) != n || len(seqs) != n {
		t.Fatalf("branch %d entries, %d distinct seqs, %v", len(br), len(seqs), err)
	}
}

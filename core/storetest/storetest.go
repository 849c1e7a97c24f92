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

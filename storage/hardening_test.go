package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// TestEveryTextIsValidUTF8 holds the record's one rule at its door:
// whatever brings invalid UTF-8 (an append from any importer or harness, a
// session's fields, an audit body, a restore), it reads back as valid
// UTF-8, each bad byte U+FFFD, and search snippets of it are valid too.
func TestEveryTextIsValidUTF8(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w\xff", Title: "bad \xc3 title"})
	if err != nil {
		t.Fatal(err)
	}
	bad := json.RawMessage("{\"text\": \"broken \xff\xfe bytes \xed\xa0\x80 here\", \"\xc0\": 1}")
	out, err := db.Append(ctx, s.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: bad, NativeID: "n\xff"},
		user("fine"))
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(out[0].Payload) || !utf8.ValidString(out[0].NativeID) {
		t.Fatalf("the append answered invalid UTF-8: %q %q", out[0].Payload, out[0].NativeID)
	}
	if _, err := db.PatchSession(ctx, s.ID, core.SessionPatch{Title: ptr("patched \xff")}); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendAudit(ctx, core.AuditRecord{Source: "t\xff", Kind: "k", Entity: s.ID, Body: json.RawMessage("{\"a\": \"\xff\"}")}); err != nil {
		t.Fatal(err)
	}
	d, err := db.Dump(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(d.Entries[0].Payload, &p); err != nil || p["text"] != "broken \ufffd\ufffd bytes \ufffd\ufffd\ufffd here" {
		t.Fatalf("payload read back as %q (%v)", d.Entries[0].Payload, err)
	}
	all := mustJSONBytes(t, d)
	if !utf8.Valid(all) || d.Session.Title != "patched \ufffd" || d.Session.Cwd != "/w\ufffd" {
		t.Fatalf("the record holds invalid UTF-8: %q", all)
	}
	// A restore of the same bytes into another record: the same rule.
	d.Session.Title = "again \xff"
	d.Entries[0].Payload = bad
	d.Audit[0].Body = json.RawMessage("{\"b\": \"\xfe\"}")
	other := storagetest.Open(t)
	if _, err := other.Restore(ctx, d); err != nil {
		t.Fatal(err)
	}
	d2, err := other.Dump(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b := mustJSONBytes(t, d2); !utf8.Valid(b) || d2.Session.Title != "again \ufffd" {
		t.Fatalf("the restored record holds invalid UTF-8: %q", b)
	}
	hits, err := db.Search(ctx, core.SearchQuery{Query: "broken"})
	if err != nil || len(hits.Hits) != 1 || !utf8.ValidString(hits.Hits[0].Snippet) {
		t.Fatalf("search: %+v, %v", hits, err)
	}
}

// TestSeqStaysBelowItsLimit: a restored session at the largest sequence
// number the record holds is refused one more entry with a clear error
// (storage's seq+1 never wraps to a negative number), and a restore past
// that number is refused before anything is written.
func TestSeqStaysBelowItsLimit(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	now := time.Now().UTC()
	s := core.Session{ID: "s_top", Harness: "fake", Cwd: "/w", HeadID: "e_top", CreatedAt: now, UpdatedAt: now}
	top := core.Entry{ID: "e_top", SessionID: s.ID, Seq: core.MaxSeq, Kind: core.KindUserMessage,
		Payload: json.RawMessage(`{"text":"at the top"}`), CreatedAt: now}
	over := top
	over.ID, over.Seq = "e_over", core.MaxSeq+1
	if _, err := db.Restore(ctx, core.SessionDump{Session: core.Session{ID: "s_over", Harness: "fake", HeadID: "e_over"},
		Entries: []core.Entry{{ID: "e_over", SessionID: "s_over", Seq: core.MaxSeq + 1, Kind: over.Kind, Payload: over.Payload, CreatedAt: now}}}); core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("restore past the limit: %v", err)
	}
	if _, err := db.GetSession(ctx, "s_over"); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("a refused restore left its session: %v", err)
	}
	if _, err := db.Restore(ctx, core.SessionDump{Session: s, Entries: []core.Entry{top}}); err != nil {
		t.Fatal(err)
	}
	_, err := db.Append(ctx, s.ID, user("one more"))
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "largest the record holds") {
		t.Fatalf("append past the limit: %v", err)
	}
	b, err := db.ActiveBranch(ctx, s.ID)
	if err != nil || len(b) != 1 || b[0].Seq != core.MaxSeq {
		t.Fatalf("branch %+v, %v", b, err)
	}
	// A bulk write (an import's fast path) is held to the same limit.
	err = db.UpdateBulk(ctx, func(w core.Writer) error {
		_, err := w.Append(ctx, s.ID, user("bulk"))
		return err
	})
	if core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("bulk append past the limit: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func mustJSONBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSearchQueryCostBound: a query over the length, word or prefix-term
// limit is refused before it runs, with a CodeInvalid error naming the
// limit and the query field and quoting at most the query's start; a
// query FTS5 cannot parse is not echoed whole either.
func TestSearchQueryCostBound(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("the kestrel hovers"))
	for _, c := range []struct{ query, limit string }{
		{strings.Repeat("a* OR ", 2000) + "a*", "limit of 1024 bytes"},
		{strings.Repeat("x", 60<<20), "limit of 1024 bytes"},
		{"a* b* c* d* e*", "limit of 4"},
		{`"a"* OR "b"* OR c* OR d* OR e*`, "limit of 4"},
		{strings.Repeat("kestrel ", 33), "limit of 32 words"},
		{`"` + strings.Repeat("k ", 33) + `"`, "limit of 32 words"},
		{strings.Repeat("((", 100) + "kestrel" + strings.Repeat(" AND NOT", 1), "not valid"},
	} {
		_, err := db.Search(ctx, core.SearchQuery{Query: c.query})
		var ce *core.Error
		if !errors.As(err, &ce) || ce.Code != core.CodeInvalid || ce.Field != "query" || !strings.Contains(ce.Message, c.limit) {
			t.Fatalf("%.40q…: %v; want invalid naming %q and the query field", c.query, err, c.limit)
		}
		if len(err.Error()) > 400 {
			t.Fatalf("%.40q…: the error is %d bytes long", c.query, len(err.Error()))
		}
	}
	// At the limits: answered.
	for _, q := range []string{"kest* hov* k* t*", strings.Repeat("kestrel ", 32), "kestrel AND hovers OR NOT NEAR"} {
		if _, err := db.Search(ctx, core.SearchQuery{Query: q}); err != nil && !strings.Contains(err.Error(), "not valid") {
			t.Fatalf("%q: %v", q, err)
		}
	}
	if p, err := db.Search(ctx, core.SearchQuery{Query: "kest* hov*"}); err != nil || len(p.Hits) != 1 {
		t.Fatalf("prefix search: %+v %v", p, err)
	}
}

// TestSearchIsInterrupted: a search within the limits that runs long (a
// few prefix terms over an index of many terms) is interrupted by its
// context's cancellation (a client's $/cancelRequest or its going away)
// and by the time limit, with cancelled and invalid errors, not its
// result; the next search on the same readers answers.
func TestSearchIsInterrupted(t *testing.T) {
	ctx := context.Background()
	db := storagetest.OpenWith(t, storage.Options{SearchTimeout: time.Hour})
	s := newSession(t, db)
	r := rand.New(rand.NewSource(1))
	err := db.UpdateBulk(ctx, func(w core.Writer) error {
		for i := 0; i < 30; i++ {
			var es []core.NewEntry
			for j := 0; j < 100; j++ {
				var b strings.Builder
				for k := 0; k < 20; k++ {
					fmt.Fprintf(&b, "%c%x ", 'a'+r.Intn(4), r.Int63())
				}
				es = append(es, user(b.String()))
			}
			if _, err := w.Append(ctx, s.ID, es...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, db, s.ID, user("the kestrel hovers"))
	// The first search indexes the 3,001 entries (the index catches up
	// before the query runs): done here, so that the slow query's time
	// below is the query's alone. The shorter of two runs is its time.
	if p, err := db.Search(ctx, core.SearchQuery{Query: "kestrel"}); err != nil || len(p.Hits) != 1 {
		t.Fatalf("the first search: %+v, %v", p, err)
	}
	const slow = "a* OR b* OR c* OR d*"
	took := time.Duration(1<<63 - 1)
	for range 2 {
		start := time.Now()
		if p, err := db.Search(ctx, core.SearchQuery{Query: slow}); err != nil || len(p.Hits) == 0 {
			t.Fatalf("the slow query, unbounded: %d hits, %v", len(p.Hits), err)
		}
		took = min(took, time.Since(start))
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(took/10, cancel)
	if p, err := db.Search(cctx, core.SearchQuery{Query: slow}); core.ErrorCode(err) != core.CodeCancelled {
		t.Fatalf("cancelled a tenth into a query of %v: %d hits, %v; want cancelled", took, len(p.Hits), err)
	}
	storage.SetSearchTimeout(db, took/10)
	_, err = db.Search(ctx, core.SearchQuery{Query: slow})
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "ran longer than the limit") {
		t.Fatalf("a query of %v with a limit of a tenth of that: %v; want invalid naming the time limit", took, err)
	}
	storage.SetSearchTimeout(db, time.Hour)
	if p, err := db.Search(ctx, core.SearchQuery{Query: "kestrel"}); err != nil || len(p.Hits) != 1 {
		t.Fatalf("the next search: %+v, %v", p, err)
	}
}

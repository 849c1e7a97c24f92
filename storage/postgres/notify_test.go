package postgres_test

import (
	"context"
	"fmt"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// openAs opens the database url names as the process origin names.
func openAs(t *testing.T, url, origin string) *postgres.DB {
	t.Helper()
	u, err := postgres.WithOrigin(url, origin)
	if err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, u, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// follower collects what FollowAppends hands over.
type follower struct {
	mu  sync.Mutex
	got []core.Entry
	ch  chan struct{}
}

func follow(t *testing.T, db *postgres.DB) *follower {
	f := &follower{ch: make(chan struct{}, 1000)}
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- db.FollowAppendsLogged(fctx, func(es []core.Entry) {
			f.mu.Lock()
			f.got = append(f.got, es...)
			f.mu.Unlock()
			f.ch <- struct{}{}
		}, func(msg string) { t.Log(msg) })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("FollowAppends ended with %v, want context.Canceled", err)
		}
	})
	return f
}

// waitFor returns the entries keep accepts once n of them arrived (or
// fails after a minute).
func (f *follower) waitFor(t *testing.T, n int, keep func(core.Entry) bool) []core.Entry {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		f.mu.Lock()
		var got []core.Entry
		for _, e := range f.got {
			if keep(e) {
				got = append(got, e)
			}
		}
		f.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-f.ch:
		case <-deadline:
			t.Fatalf("only %d of %d entries arrived: %s", len(got), n, storetest.Texts(got))
		}
	}
}

// wait returns once n entries arrived (or fails after a minute: a hang,
// not a timing threshold).
func (f *follower) wait(t *testing.T, n int) []core.Entry {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		f.mu.Lock()
		got := append([]core.Entry(nil), f.got...)
		f.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-f.ch:
		case <-deadline:
			t.Fatalf("only %d of %d entries arrived", len(got), n)
		}
	}
}

// TestFollowAppendsAcrossProcesses: two stores on one database with two
// origins stand for two processes. What one appends (in a transaction, in
// several sessions) reaches the other's follower whole and in order, and
// not its own; a rolled-back transaction reaches no one.
func TestFollowAppendsAcrossProcesses(t *testing.T) {
	url := pgtest.URL(t)
	a := openAs(t, url, "proc-a")
	b := openAs(t, url, "proc-b")
	fa, fb := follow(t, a), follow(t, b)
	// Both listen once a notice sent after LISTEN arrives: markers, one
	// from each, until each has heard the other.
	ready(t, a, fb)
	ready(t, b, fa)

	s1, _ := a.CreateSession(ctx, core.Session{Harness: "fake"})
	s2, _ := a.CreateSession(ctx, core.Session{Harness: "fake"})
	var want []string
	for i := range 5 {
		es := storetest.MustAppend(t, a, s1.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(fmt.Sprintf(`{"text":"s1 %d"}`, i))})
		want = append(want, es[0].ID)
	}
	err := a.Update(ctx, func(w core.Writer) error {
		for _, s := range []string{s1.ID, s2.ID} {
			es, err := w.Append(ctx, s, core.NewEntry{Kind: core.KindAssistantMessage, Payload: []byte(`{"text":"both"}`)},
				core.NewEntry{Kind: core.KindAssistantMessage, Payload: []byte(`{"text":"both again"}`)})
			if err != nil {
				return err
			}
			want = append(want, es[0].ID, es[1].ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = a.Update(ctx, func(w core.Writer) error {
		if _, err := w.Append(ctx, s1.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(`{"text":"rolled back"}`)}); err != nil {
			return err
		}
		return fmt.Errorf("roll it back")
	})
	last := storetest.MustAppend(t, a, s2.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(`{"text":"last"}`)})
	want = append(want, last[0].ID)

	all := fb.waitFor(t, len(want), func(e core.Entry) bool { return storetest.Texts([]core.Entry{e}) != "marker" })
	if len(all) != len(want) {
		t.Fatalf("b heard %d entries, want %d: %s", len(all), len(want), storetest.Texts(all))
	}
	for i, e := range all {
		if e.ID != want[i] {
			t.Fatalf("entry %d heard is %s (%s), want %s: %s", i, e.ID, storetest.Texts([]core.Entry{e}), want[i], storetest.Texts(all))
		}
	}
	// a heard only b's markers, never its own appends.
	for _, e := range fa.wait(t, 1) {
		if storetest.Texts([]core.Entry{e}) != "marker" {
			t.Errorf("a heard its own append %s", storetest.Texts([]core.Entry{e}))
		}
	}
}

// ready appends markers with from until f has heard one.
func ready(t *testing.T, from *postgres.DB, f *follower) {
	t.Helper()
	s, err := from.CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	for range 600 {
		storetest.MustAppend(t, from, s.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(`{"text":"marker"}`)})
		select {
		case <-f.ch:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("the follower never heard a marker")
}

// TestFollowAppendsReadsWhatItMissed: while a follower's connection is
// down (the server ended it and refuses new ones), another process appends
// to a session the follower knew and to a new one, and the follower's own
// process appends too. Once it connects again it hands over the other
// process's entries, whole, in order, once each, and none of its own; what
// comes after arrives as before.
func TestFollowAppendsReadsWhatItMissed(t *testing.T) {
	url := pgtest.URL(t)
	a := openAs(t, url, "proc-a")
	b := openAs(t, url, "proc-b")
	fb := follow(t, b)
	ready(t, a, fb)
	s1, _ := a.CreateSession(ctx, core.Session{Harness: "fake"})
	mine, _ := b.CreateSession(ctx, core.Session{Harness: "fake"})
	text := func(s string) core.NewEntry {
		return core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(fmt.Sprintf(`{"text":%q}`, s))}
	}
	want := []string{storetest.MustAppend(t, a, s1.ID, text("before"))[0].ID}
	fb.waitFor(t, 1, func(e core.Entry) bool { return e.SessionID == s1.ID })

	admin, err := pgx.Connect(ctx, pgtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	var ended int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = $1 AND application_name = 'bridge-follow'`, name).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("ended %d listening connections (%v), want b's one", ended, err)
	}
	// Down: a appends to s1 and to a new session, b to its own.
	for i := range 3 {
		want = append(want, storetest.MustAppend(t, a, s1.ID, text(fmt.Sprintf("while down %d", i)))[0].ID)
	}
	s2, err := a.CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range storetest.MustAppend(t, a, s2.ID, text("new session"), text("new session again")) {
		want = append(want, e.ID)
	}
	storetest.MustAppend(t, b, mine.ID, text("b's own while down"))
	storetest.MustAppend(t, b, s1.ID, text("b's own in s1"))
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS true`); err != nil {
		t.Fatal(err)
	}
	// Up again: one more append, handed over after what was missed.
	last := storetest.MustAppend(t, a, s1.ID, text("after"))[0].ID
	notMarker := func(e core.Entry) bool { return storetest.Texts([]core.Entry{e}) != "marker" }
	fb.waitFor(t, 1, func(e core.Entry) bool { return e.ID == last })
	all := fb.waitFor(t, len(want)+1, notMarker)
	bySession := map[string][]string{}
	for _, e := range all {
		bySession[e.SessionID] = append(bySession[e.SessionID], e.ID)
	}
	wantBy := map[string][]string{s1.ID: {want[0], want[1], want[2], want[3], last}, s2.ID: {want[4], want[5]}}
	if fmt.Sprint(bySession) != fmt.Sprint(wantBy) {
		t.Fatalf("b heard %s\nwant (by session) %v, got %v", storetest.Texts(all), wantBy, bySession)
	}
}

// TestChangeFeed runs core.ChangeFeed's conformance suite on PostgreSQL:
// two stores on one database with two origins.
func TestChangeFeed(t *testing.T) {
	storetest.RunChangeFeed(t, func(t *testing.T) (core.Store, core.Store) {
		url := pgtest.URL(t)
		return openAs(t, url, "proc-a"), openAs(t, url, "proc-b")
	})
}

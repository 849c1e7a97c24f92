package postgres_test

import (
	"context"
	"fmt"
	neturl "net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestSessionFeed runs core.SessionFeed's conformance suite on
// PostgreSQL: two origins on one database stand for two processes.
func TestSessionFeed(t *testing.T) {
	storetest.RunSessionFeed(t, func(t *testing.T) (core.Store, core.Store) {
		url := pgtest.URL(t)
		return openAs(t, url, "proc-a"), openAs(t, url, "proc-b")
	})
}

// TestFollowSessionsReadsWhatItMissed: while a session follower's
// connection is down (the server ended it and refuses new ones), another
// process renames a session, archives another and appends to a third,
// and the follower's own process renames a fourth. Once it connects again
// it hands over the rename and the archive, not the append nor its own
// rename, and what comes after arrives as before.
func TestFollowSessionsReadsWhatItMissed(t *testing.T) {
	url := pgtest.URL(t)
	a := openAs(t, url, "proc-a")
	b := openAs(t, url, "proc-b")
	got := make(chan string, 1000)
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.FollowSessions(fctx, func(id string) { got <- id }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("FollowSessions ended with %v, want context.Canceled", err)
		}
	})
	rename := func(st core.Store, id, title string) {
		t.Helper()
		if _, err := st.PatchSession(ctx, id, core.SessionPatch{Title: core.Ptr(title)}); err != nil {
			t.Fatal(err)
		}
	}
	renamed, _ := a.CreateSession(ctx, core.Session{Harness: "fake"})
	archived, _ := a.CreateSession(ctx, core.Session{Harness: "fake"})
	appended, _ := a.CreateSession(ctx, core.Session{Harness: "fake"})
	mine, _ := b.CreateSession(ctx, core.Session{Harness: "fake"})
	warm, _ := a.CreateSession(ctx, core.Session{Harness: "fake"})
	// The follower listens once it hands over a rename made after it started.
	for i := 0; ; i++ {
		if i == 600 {
			t.Fatal("the follower never handed a rename over")
		}
		rename(a, warm.ID, fmt.Sprintf("warming up %d", i))
		select {
		case <-got:
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}

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
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid, 60000)) FROM pg_stat_activity
		WHERE datname = $1 AND application_name = 'bridge-follow-sessions'`, name).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("ended %d listening connections (%v), want b's one", ended, err)
	}
	// Down: a renames, archives and appends; b renames its own session.
	rename(a, renamed.ID, "renamed while down")
	if _, err := a.PatchSession(ctx, archived.ID, core.SessionPatch{Archived: core.Ptr(true)}); err != nil {
		t.Fatal(err)
	}
	storetest.MustAppend(t, a, appended.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(`{"text":"hi"}`)})
	rename(b, mine.ID, "the follower's own, while down")
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS true`); err != nil {
		t.Fatal(err)
	}
	// Up again: what was missed is handed over (in any order), and only
	// that; then what comes after, as before.
	handed := func(n int) []string {
		t.Helper()
		var out []string
		deadline := time.After(time.Minute)
		for len(out) < n {
			select {
			case x := <-got:
				if x != warm.ID { // notices of earlier tries may still come
					out = append(out, x)
				}
			case <-deadline:
				t.Fatalf("after reconnecting the follower handed over only %v", out)
			}
		}
		sort.Strings(out)
		return out
	}
	missed := handed(2)
	want := []string{renamed.ID, archived.ID}
	sort.Strings(want)
	if fmt.Sprint(missed) != fmt.Sprint(want) {
		t.Errorf("handed over %v after reconnecting, want the renamed and the archived session %v (appended %s, own %s)",
			missed, want, appended.ID, mine.ID)
	}
	// What the follower read back is all handed over before the notice of
	// a change made now.
	last, _ := a.CreateSession(ctx, core.Session{Harness: "fake"})
	rename(a, last.ID, "after")
	for {
		x := handed(1)[0]
		if x == last.ID {
			break
		}
		t.Errorf("handed over %s after reconnecting, which was not changed by another process while down (appended %s, own %s)",
			x, appended.ID, mine.ID)
	}
}

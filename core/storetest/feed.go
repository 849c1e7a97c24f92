package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// OpenTwo opens two stores on one fresh record, standing for two processes
// sharing it (two origins on one PostgreSQL database, two opens of one
// SQLite file); both are closed by the caller's cleanups.
type OpenTwo func(t *testing.T) (a, b core.Store)

// RunChangeFeed is the conformance suite of core.ChangeFeed, for a Store
// that implements it: what one process commits (plain appends, an Update
// over two sessions, an append of 50 entries, a session created after
// the follower started) reaches the other's follower whole, in sequence
// order within each session, once each; what the follower's own process
// appends meanwhile is not handed back; a rolled-back Update reaches no
// one.
func RunChangeFeed(t *testing.T, open OpenTwo) {
	a, b := open(t)
	fb := followStore(t, b)
	markers := newSession(t, a, "fake")
	// The follower runs once it hands over an entry appended after it
	// started.
	for i := 0; ; i++ {
		if i == 600 {
			t.Fatal("the follower never handed over an entry")
		}
		MustAppend(t, a, markers.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(`{"text":"marker"}`)})
		if fb.count(func(core.Entry) bool { return true }) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	s1 := newSession(t, a, "fake")
	mine := newSession(t, b, "fake")
	text := func(s string) core.NewEntry {
		return core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(fmt.Sprintf(`{"text":%q}`, s))}
	}
	want := map[string][]string{}
	note := func(es []core.Entry) {
		for _, e := range es {
			want[e.SessionID] = append(want[e.SessionID], e.ID)
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the follower's own process writes meanwhile
		defer wg.Done()
		for i := range 10 {
			if _, err := b.Append(ctx, mine.ID, text(fmt.Sprintf("b's own %d", i))); err != nil {
				t.Errorf("b appends: %v", err)
				return
			}
			if _, err := b.Append(ctx, s1.ID, text(fmt.Sprintf("b's own in s1 %d", i))); err != nil {
				t.Errorf("b appends: %v", err)
				return
			}
		}
	}()
	for i := range 5 {
		note(MustAppend(t, a, s1.ID, text(fmt.Sprintf("s1 %d", i))))
	}
	s2 := newSession(t, a, "fake")
	err := a.Update(ctx, func(w core.Writer) error {
		for _, s := range []string{s1.ID, s2.ID} {
			es, err := w.Append(ctx, s, text("both"), text("both again"))
			if err != nil {
				return err
			}
			note(es)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = a.Update(ctx, func(w core.Writer) error {
		if _, err := w.Append(ctx, s1.ID, text("rolled back")); err != nil {
			return err
		}
		return fmt.Errorf("roll it back")
	})
	bulk := make([]core.NewEntry, 50)
	for i := range bulk {
		bulk[i] = text(fmt.Sprintf("bulk %d", i))
	}
	note(MustAppend(t, a, s2.ID, bulk...))
	wg.Wait()
	last := MustAppend(t, a, s1.ID, text("last"))
	note(last)

	fb.waitFor(t, func(e core.Entry) bool { return e.ID == last[0].ID })
	got := map[string][]string{}
	for _, e := range fb.entries() {
		if e.SessionID != markers.ID {
			got[e.SessionID] = append(got[e.SessionID], e.ID)
		}
	}
	for _, s := range []string{s1.ID, s2.ID, mine.ID} {
		if fmt.Sprint(got[s]) != fmt.Sprint(want[s]) {
			t.Errorf("session %s: the follower handed over %d entries %v, want %d %v (the other process's, in order, once; none of its own)",
				s, len(got[s]), got[s], len(want[s]), want[s])
		}
	}
	for _, batch := range fb.batches() {
		for i, e := range batch {
			if e.SessionID != batch[0].SessionID || i > 0 && e.Seq <= batch[i-1].Seq {
				t.Fatalf("a batch mixes sessions or is out of order: %s", Texts(batch))
			}
		}
	}
}

// feedFollower collects what FollowAppends hands over.
type feedFollower struct {
	mu   sync.Mutex
	got  [][]core.Entry
	wake chan struct{}
}

func followStore(t *testing.T, st core.Store) *feedFollower {
	t.Helper()
	feed, ok := st.(core.ChangeFeed)
	if !ok {
		t.Fatalf("%T does not implement core.ChangeFeed", st)
	}
	f := &feedFollower{wake: make(chan struct{}, 1)}
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- feed.FollowAppends(fctx, func(es []core.Entry) {
			f.mu.Lock()
			f.got = append(f.got, es)
			f.mu.Unlock()
			select {
			case f.wake <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("FollowAppends ended with %v, want context.Canceled", err)
		}
	})
	return f
}

func (f *feedFollower) batches() [][]core.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]core.Entry(nil), f.got...)
}

func (f *feedFollower) entries() []core.Entry {
	var out []core.Entry
	for _, b := range f.batches() {
		out = append(out, b...)
	}
	return out
}

func (f *feedFollower) count(keep func(core.Entry) bool) int {
	n := 0
	for _, e := range f.entries() {
		if keep(e) {
			n++
		}
	}
	return n
}

// waitFor returns once an entry keep accepts was handed over, or fails
// after a minute (a hang, not a timing threshold).
func (f *feedFollower) waitFor(t *testing.T, keep func(core.Entry) bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	for f.count(keep) == 0 {
		select {
		case <-f.wake:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("the follower did not hand the entry over; it has %s", Texts(f.entries()))
		}
	}
}

// RunSessionFeed is the conformance suite of core.SessionFeed, for a Store
// that implements it: a rename, an archive and a head moved back to another
// branch that one process commits reach the other's follower, each naming
// its session; an append (even one that starts a branch) is no such
// change; the follower's own process's rename is not handed back; a
// rolled-back rename reaches no one.
func RunSessionFeed(t *testing.T, open OpenTwo) {
	a, b := open(t)
	feed, ok := b.(core.SessionFeed)
	if !ok {
		t.Fatalf("%T does not implement core.SessionFeed", b)
	}
	got := make(chan string, 1000)
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- feed.FollowSessions(fctx, func(id string) { got <- id }) }()
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
	// waitFor reads what the follower hands over until id comes, and
	// returns what came before it.
	waitFor := func(id string) []string {
		t.Helper()
		var before []string
		deadline := time.After(time.Minute)
		for {
			select {
			case x := <-got:
				if x == id {
					return before
				}
				before = append(before, x)
			case <-deadline:
				t.Fatalf("the follower did not hand session %s over; it handed %v", id, before)
			}
		}
	}
	// The follower runs once it hands over a change made after it started.
	warm := newSession(t, a, "fake")
	for i := 0; ; i++ {
		if i == 600 {
			t.Fatal("the follower never handed a rename over")
		}
		rename(a, warm.ID, fmt.Sprintf("warming up %d", i))
		select {
		case x := <-got:
			if x != warm.ID {
				t.Fatalf("the follower handed over %s, want %s", x, warm.ID)
			}
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}

	text := core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(`{"text":"hi"}`)}
	renamed, archived, moved := newSession(t, a, "fake"), newSession(t, a, "fake"), newSession(t, a, "fake")
	appended, mine, rolled := newSession(t, a, "fake"), newSession(t, b, "fake"), newSession(t, a, "fake")
	main := MustAppend(t, a, moved.ID, text, text, text)
	if _, err := a.AppendTo(ctx, moved.ID, main[0].ID, text); err != nil { // a branch: an append
		t.Fatal(err)
	}
	MustAppend(t, a, appended.ID, text, text)
	rename(b, mine.ID, "the follower's own")
	_ = a.Update(ctx, func(w core.Writer) error {
		if _, err := w.PatchSession(ctx, rolled.ID, core.SessionPatch{Title: core.Ptr("rolled back")}); err != nil {
			return err
		}
		return fmt.Errorf("roll it back")
	})
	rename(a, renamed.ID, "renamed")
	if _, err := a.PatchSession(ctx, archived.ID, core.SessionPatch{Archived: core.Ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if err := a.MoveHead(ctx, moved.ID, main[2].ID); err != nil {
		t.Fatal(err)
	}
	last := newSession(t, a, "fake")
	rename(a, last.ID, "last")
	handed := map[string]bool{}
	for _, id := range waitFor(last.ID) {
		handed[id] = true
	}
	for _, c := range []struct {
		id, what string
		want     bool
	}{
		{renamed.ID, "renamed", true}, {archived.ID, "archived", true}, {moved.ID, "whose head moved to another branch", true},
		{appended.ID, "only appended to", false}, {mine.ID, "renamed by the follower's own process", false},
		{rolled.ID, "renamed in a rolled-back transaction", false},
	} {
		if handed[c.id] != c.want {
			t.Errorf("the session %s (%s): handed over %v, want %v", c.what, c.id, handed[c.id], c.want)
		}
	}
}

package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// RunLeases is the conformance suite of core.SessionLeases, for a Store
// that implements it: a lease is held by one owner at a time, renewed by
// its owner, refused to others with CodeLiveElsewhere naming the owner,
// passed on after release or expiry, and of many owners racing for a free
// lease exactly one wins.
func RunLeases(t *testing.T, open Open) {
	st := open(t)
	t.Cleanup(func() { _ = st.Close() })
	ls, ok := st.(core.SessionLeases)
	if !ok {
		t.Fatalf("%T does not implement core.SessionLeases", st)
	}
	sid := newSession(t, st, "fake").ID
	const minute = time.Minute
	if err := ls.AcquireLease(ctx, sid, "proc-a", minute); err != nil {
		t.Fatalf("a free lease: %v", err)
	}
	if err := ls.AcquireLease(ctx, sid, "proc-a", minute); err != nil {
		t.Fatalf("its owner renews a lease: %v", err)
	}
	err := ls.AcquireLease(ctx, sid, "proc-b", minute)
	WantCode(t, err, core.CodeLiveElsewhere)
	var le *core.LiveElsewhereError
	if !errors.As(err, &le) || le.Owner != "proc-a" || le.SessionID != sid || le.Expires.Before(time.Now().Add(30*time.Second)) {
		t.Errorf("the refusal does not name the owner and the lease's end: %#v", le)
	}
	// Only the owner releases.
	if err := ls.ReleaseLease(ctx, sid, "proc-b"); err != nil {
		t.Fatalf("ReleaseLease by another owner: %v", err)
	}
	WantCode(t, ls.AcquireLease(ctx, sid, "proc-b", minute), core.CodeLiveElsewhere)
	if err := ls.ReleaseLease(ctx, sid, "proc-a"); err != nil {
		t.Fatalf("ReleaseLease: %v", err)
	}
	if err := ls.AcquireLease(ctx, sid, "proc-b", minute); err != nil {
		t.Fatalf("a released lease passes on: %v", err)
	}
	WantCode(t, ls.AcquireLease(ctx, sid, "proc-a", minute), core.CodeLiveElsewhere)

	// Expiry: a lease not renewed lapses, and another owner takes it.
	other := newSession(t, st, "fake").ID
	if err := ls.AcquireLease(ctx, other, "proc-a", time.Millisecond); err != nil {
		t.Fatalf("a short lease: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := ls.AcquireLease(ctx, other, "proc-b", minute); err != nil {
		t.Fatalf("an expired lease passes on: %v", err)
	}
	WantCode(t, ls.AcquireLease(ctx, other, "proc-a", minute), core.CodeLiveElsewhere)

	// A race for a free lease has one winner; the others are told who.
	raced := newSession(t, st, "fake").ID
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ls.AcquireLease(ctx, raced, fmt.Sprintf("racer-%d", i), minute)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case core.ErrorCode(err) != core.CodeLiveElsewhere:
			t.Errorf("a racer failed otherwise: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d racers won the lease, want exactly 1", won)
	}
	// A lease for a session not yet written (a new session takes its lease
	// before its row exists) is allowed.
	if err := ls.AcquireLease(ctx, "s_not_yet_written", "proc-a", minute); err != nil {
		t.Errorf("a lease before the session's row: %v", err)
	}
}

package service_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

// TestLeaseRefusesASessionLiveElsewhere: two services (two processes) on
// one record. While the first runs a session's harness, the second refuses
// to resume or prompt it with live_elsewhere naming the owner, and writes
// nothing to its record; once the first lets go, the second resumes it the
// honest way (native: the harness's own stored session, proven).
func TestLeaseRefusesASessionLiveElsewhere(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		state := t.TempDir()
		a := newRig(t, rigOptions{open: open, fake: fake.Options{StateDir: state}, leaseOwner: "process-a"})
		s := a.create()
		a.prompt(s.ID, "say first answer")
		b := newRig(t, rigOptions{db: a.db, fake: fake.Options{StateDir: state}, leaseOwner: "process-b"})
		before := len(a.branch(s.ID))

		_, err := b.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
		wantLiveElsewhere(t, err, "process-a")
		_, err = b.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.ID, Content: []schema.Content{{Type: "text", Text: "say from b"}}})
		wantLiveElsewhere(t, err, "process-a")
		if after := len(a.branch(s.ID)); after != before {
			t.Errorf("the refused process wrote %d entries to the session", after-before)
		}
		// The owner still drives it.
		a.prompt(s.ID, "say second answer")

		// The owner stops (its process goes away): the lease is released and
		// the other process resumes the session natively.
		a.svc.Close(ctx)
		res, err := b.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
		if err != nil || res.Mode != core.ModeNative {
			t.Fatalf("resume after the owner stopped: %+v %v, want native", res, err)
		}
		b.prompt(s.ID, "say from b now")
	})
}

// TestLeasePassesOnAfterExpiry: a lease left by a process that died (never
// renewed, never released) refuses the session until it lapses, then the
// session resumes here.
func TestLeasePassesOnAfterExpiry(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		r := newRig(t, rigOptions{open: open, leaseOwner: "process-b"})
		s := r.create()
		r.prompt(s.ID, "say hello")
		r.svc.Close(ctx)
		r = newRig(t, rigOptions{db: r.db, leaseOwner: "process-b"})
		if err := r.db.AcquireLease(ctx, s.ID, "died-without-releasing", time.Minute); err != nil {
			t.Fatal(err)
		}
		_, err := r.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
		wantLiveElsewhere(t, err, "died-without-releasing")
		// The dead process's lease lapses (made short here, as if a minute
		// had passed).
		if err := r.db.ReleaseLease(ctx, s.ID, "died-without-releasing"); err != nil {
			t.Fatal(err)
		}
		if err := r.db.AcquireLease(ctx, s.ID, "died-without-releasing", time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		res, err := r.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
		if err != nil || res.Mode == "" || res.Mode == core.ModeHot {
			t.Fatalf("resume after the lease lapsed: %+v %v, want a cold resume", res, err)
		}
		r.prompt(s.ID, "say after the lapse")
	})
}

// TestLeaseLostStopsTheHarness: a process whose lease was taken by another
// (it stalled past the lease's end) stops driving the session instead of
// driving it beside the new owner.
func TestLeaseLostStopsTheHarness(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		r := newRig(t, rigOptions{open: open, leaseOwner: "stalled", leaseTTL: 300 * time.Millisecond})
		s := r.create()
		r.prompt(s.ID, "say hello")
		deadline := time.Now().Add(30 * time.Second)
		// Another process takes the lease as if "stalled" had let it lapse:
		// stalled's renewal (every 100 ms) may land between the release and
		// the take, which is then refused; take it again.
		for {
			if err := r.db.ReleaseLease(ctx, s.ID, "stalled"); err != nil {
				t.Fatal(err)
			}
			err := r.db.AcquireLease(ctx, s.ID, "new-owner", time.Minute)
			if err == nil {
				break
			}
			if core.ErrorCode(err) != core.CodeLiveElsewhere || time.Now().After(deadline) {
				t.Fatalf("take the lease from stalled: %v", err)
			}
		}
		for {
			_, err := r.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
			if err != nil {
				wantLiveElsewhere(t, err, "new-owner")
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the process that lost the lease still drives the session (resume answers hot)")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

func wantLiveElsewhere(t *testing.T, err error, owner string) {
	t.Helper()
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != core.CodeLiveElsewhere {
		t.Fatalf("want a live_elsewhere error, got %v", err)
	}
	var le *core.LiveElsewhereError
	if !errors.As(err, &le) || le.Owner != owner {
		t.Errorf("live_elsewhere names owner %+v, want %q", le, owner)
	}
}

// TestLeaseOfAStoppedProcessIsTakenOver: a lease whose holder is a process
// of this machine that no longer runs (killed, or stopped on a full disk
// before it could release it) is taken over at once instead of when it
// lapses; one whose holder still runs, or runs on another machine, still
// refuses the session.
func TestLeaseOfAStoppedProcessIsTakenOver(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		r := newRig(t, rigOptions{open: open, leaseOwner: "process-b"})
		s := r.create()
		r.prompt(s.ID, "say hello")
		r.svc.Close(ctx)
		r = newRig(t, rigOptions{db: r.db, leaseOwner: "process-b"})

		me := service.ProcessOwner()
		host := me[:strings.LastIndex(me[:strings.LastIndex(me, ".")], ".")]
		ended := exec.Command("true")
		if err := ended.Run(); err != nil {
			t.Fatal(err)
		}
		running := exec.Command("sleep", "60")
		if err := running.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = running.Process.Kill(); _ = running.Wait() })

		for _, holder := range []string{
			fmt.Sprintf("%s.%d.cafe0001", host, running.Process.Pid),
			fmt.Sprintf("another-machine.%d.cafe0002", ended.Process.Pid),
		} {
			if err := r.db.AcquireLease(ctx, s.ID, holder, time.Minute); err != nil {
				t.Fatal(err)
			}
			_, err := r.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
			wantLiveElsewhere(t, err, holder)
			if err := r.db.ReleaseLease(ctx, s.ID, holder); err != nil {
				t.Fatal(err)
			}
		}

		gone := fmt.Sprintf("%s.%d.cafe0003", host, ended.Process.Pid)
		if err := r.db.AcquireLease(ctx, s.ID, gone, time.Minute); err != nil {
			t.Fatal(err)
		}
		res, err := r.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
		if err != nil || res.Mode == "" || res.Mode == core.ModeHot {
			t.Fatalf("resume of a session whose lease holder stopped: %+v %v, want a cold resume at once", res, err)
		}
		r.prompt(s.ID, "say after the takeover")
	})
}

package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
)

// TestAfterTurnRaisesAPhaseBoundary: a turn that completed a plan step is
// followed by a phase_boundary checkpoint, in the background and waiting
// for any turn; while it runs, a prompt arriving waits for it
// (AutoRunning). A turn that completed no step raises nothing.
func TestAfterTurnRaisesAPhaseBoundary(t *testing.T) {
	r := newRig(t, fake.Options{}, nil)
	l := r.start()
	r.ctl.AfterTurn(l, 0)
	if n := r.goes.Load(); n != 0 {
		t.Fatalf("a turn that completed no plan step started %d controller jobs", n)
	}
	release := make(chan struct{})
	r.cp.answer = func(ctx context.Context, a ask) (checkpointer.Outcome, error) {
		<-release
		return checkpointer.Outcome{EntryID: "e_boundary"}, nil
	}
	r.ctl.AfterTurn(l, 2)
	a := r.awaitAsk()
	if a.sessionID != l.ID || a.req.Reason != checkpoint.ReasonPhaseBoundary || !a.req.Wait {
		t.Errorf("after a turn that completed 2 steps the controller asked %+v, want a phase_boundary of %s that waits for the turn", a, l.ID)
	}
	if !l.AutoRunning() {
		t.Error("a prompt arriving during the phase_boundary checkpoint would not wait for it (AutoRunning is false)")
	}
	close(release)
	r.wg.Wait()
	if l.AutoRunning() {
		t.Error("the session still counts a controller checkpoint after it ended")
	}
	if !r.log.has("phase_boundary checkpoint e_boundary") {
		t.Errorf("the checkpoint was not logged: %q", r.log.lines)
	}
}

// TestGaugePressure: a gauge reading at 75% of the window
// (context_pressure) or into the response reserve (response_reserve)
// queues one controller checkpoint, which decides again with a fresh
// state; a reading below both, or a harness that compacts its own window,
// queues nothing, and a second reading while one is queued adds none.
func TestGaugePressure(t *testing.T) {
	compacts := core.Probe{Capabilities: []core.Capability{{Name: core.CapCompactCommand, Available: true}}}
	for _, c := range []struct {
		name      string
		used      int64
		reserve   int64
		cached    *core.Probe
		freshUsed int64 // the gauge the fresh state reports
		want      checkpoint.Reason
		queued    bool
	}{
		{name: "pressure", used: 80_000, freshUsed: 80_000, want: checkpoint.ReasonContextPressure, queued: true},
		{name: "reserve", used: 60_000, reserve: 50_000, freshUsed: 60_000, want: checkpoint.ReasonResponseReserve, queued: true},
		{name: "below", used: 50_000, reserve: 10_000},
		{name: "harness compacts", used: 90_000, cached: &compacts},
		{name: "gone by the time it runs", used: 80_000, freshUsed: 10_000, queued: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, fake.Options{}, func(o *Options) { o.ResponseReserve = c.reserve })
			r.hosts.cached = c.cached
			r.cp.state = checkpoint.State{HasGauge: true, GaugeUsed: c.freshUsed, GaugeSize: 100_000, ResponseReserve: c.reserve}
			release := make(chan struct{})
			r.cp.answer = func(ctx context.Context, a ask) (checkpointer.Outcome, error) {
				<-release
				return checkpointer.Outcome{EntryID: "e_pressure"}, nil
			}
			l := r.start()
			g := core.Gauge{Used: c.used, Size: 100_000}
			r.ctl.Gauge(l, g)
			if c.want != "" {
				a := r.awaitAsk()
				if a.req.Reason != c.want || !a.req.Wait {
					t.Errorf("a reading of %d/100000 with reserve %d asked %+v, want %s", c.used, c.reserve, a.req, c.want)
				}
			}
			r.ctl.Gauge(l, g) // while the first is queued or running
			close(release)
			r.wg.Wait()
			if got := r.goes.Load(); (got == 1) != c.queued || got > 1 {
				t.Errorf("two readings queued %d controller checkpoints, want %v", got, map[bool]int{true: 1, false: 0}[c.queued])
			}
			if got := len(r.cp.asks()); (c.want != "") != (got == 1) || got > 1 {
				t.Errorf("the checkpointer was asked %d times, want %s", got, map[bool]string{true: "once", false: "never"}[c.want != ""])
			}
		})
	}
}

// TestIdleSuspension: an idle session whose clock fires is checkpointed
// (before_suspend, waiting) and its process stopped, recorded as
// suspended by "idle"; one in a turn is left running; one prompted while
// the checkpoint was being written is not suspended.
func TestIdleSuspension(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		r := newRig(t, fake.Options{}, nil)
		l := r.start()
		r.ctl.idle(l)
		r.wg.Wait()
		a := r.awaitAsk()
		if a.req.Reason != checkpoint.ReasonBeforeSuspend || !a.req.Wait {
			t.Errorf("the idle suspension asked %+v, want before_suspend, waiting", a.req)
		}
		if r.lives.Get(l.ID) != nil || l.Alive() {
			t.Error("the idle session's process still runs")
		}
		st := r.statuses(l.ID)
		if len(st) != 1 || st[0].Status != "suspended" || st[0].By != "idle" {
			t.Errorf("the record says %+v, want one status suspended by idle", st)
		}
	})
	t.Run("in a turn", func(t *testing.T) {
		r := newRig(t, fake.Options{}, nil)
		l := r.start()
		if !l.Turn.TryLock() {
			t.Fatal("the new session's turn is taken")
		}
		r.ctl.idle(l)
		l.Turn.Unlock()
		r.wg.Wait()
		if r.goes.Load() != 0 || len(r.cp.asks()) != 0 || !l.Alive() {
			t.Error("a session running a turn was suspended as idle")
		}
	})
	t.Run("prompted meanwhile", func(t *testing.T) {
		r := newRig(t, fake.Options{}, nil)
		l := r.start()
		r.cp.answer = func(ctx context.Context, a ask) (checkpointer.Outcome, error) {
			l.BeginPrompt() // a prompt arrives while the checkpoint is written
			return checkpointer.Outcome{EntryID: "e_suspend"}, nil
		}
		r.ctl.idle(l)
		r.wg.Wait()
		if !l.Alive() || r.lives.Get(l.ID) != l {
			t.Error("a session prompted during its idle checkpoint was suspended")
		}
		if st := r.statuses(l.ID); len(st) != 0 {
			t.Errorf("the record says %+v, want no status", st)
		}
	})
}

// TestSuspendAnswers: session/suspend refuses (busy) while a tool runs or
// an approval waits, and leaves the process running; a checkpoint with no
// new work to keep is skipped and named, a failed one does not stop the
// suspension; a session with no process is left alone.
func TestSuspendAnswers(t *testing.T) {
	for _, c := range []struct {
		name       string
		err        error
		wantCode   core.Code
		suppressed checkpoint.Suppression
		entry      string
	}{
		{name: "written", entry: "e_checkpoint"},
		{name: "tool in flight", err: refusal(checkpoint.SuppressedToolInFlight), wantCode: core.CodeBusy},
		{name: "approval pending", err: refusal(checkpoint.SuppressedApproval), wantCode: core.CodeBusy},
		{name: "no new work", err: refusal(checkpoint.SuppressedNoWork), suppressed: checkpoint.SuppressedNoWork},
		{name: "checkpoint failed", err: errors.New("the fork died")},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, fake.Options{}, nil)
			if c.err != nil {
				r.cp.answer = func(context.Context, ask) (checkpointer.Outcome, error) { return checkpointer.Outcome{}, c.err }
			}
			l := r.start()
			out, err := r.ctl.Suspend(r.ctx, l.ID)
			if a := r.awaitAsk(); a.req.Reason != checkpoint.ReasonBeforeSuspend || a.req.Wait {
				t.Errorf("session/suspend asked %+v, want before_suspend without waiting for a turn", a.req)
			}
			if c.wantCode != "" {
				if core.ErrorCode(err) != c.wantCode || !l.Alive() {
					t.Fatalf("Suspend = %+v, %v (process running: %v), want %s and the process running", out, err, l.Alive(), c.wantCode)
				}
				return
			}
			if err != nil || !out.Suspended || out.Suppressed != c.suppressed || out.CheckpointEntryID != c.entry {
				t.Fatalf("Suspend = %+v, %v; want suspended, suppressed %q, checkpoint %q", out, err, c.suppressed, c.entry)
			}
			if l.Alive() {
				t.Error("the suspended session's process still runs")
			}
			if st := r.statuses(l.ID); len(st) != 1 || st[0].Status != "suspended" || st[0].By != "client" {
				t.Errorf("the record says %+v, want suspended by client", st)
			}
		})
	}
	r := newRig(t, fake.Options{}, nil)
	s := r.session()
	if out, err := r.ctl.Suspend(r.ctx, s.ID); err != nil || out.Suspended || len(r.cp.asks()) != 0 {
		t.Errorf("Suspend of a session with no process = %+v, %v, %d checkpoints; want nothing done", out, err, len(r.cp.asks()))
	}
}

// TestShutdownCheckpoints: Close gives every live session a
// before_shutdown checkpoint; off, it gives none; one that does not finish
// within the limit is cancelled and named in the log, and shutdown goes
// on.
func TestShutdownCheckpoints(t *testing.T) {
	r := newRig(t, fake.Options{}, nil)
	a, b := r.start(), r.start()
	r.ctl.Shutdown(r.ctx)
	got := map[string]checkpoint.Reason{}
	for _, x := range r.cp.asks() {
		got[x.sessionID] = x.req.Reason
	}
	if len(got) != 2 || got[a.ID] != checkpoint.ReasonBeforeShutdown || got[b.ID] != checkpoint.ReasonBeforeShutdown {
		t.Errorf("shutdown asked %v, want before_shutdown of %s and %s", got, a.ID, b.ID)
	}

	off := newRig(t, fake.Options{}, func(o *Options) { o.NoShutdownCheckpoint = true })
	off.start()
	off.ctl.Shutdown(off.ctx)
	if n := len(off.cp.asks()); n != 0 {
		t.Errorf("with shutdown checkpoints off, shutdown asked %d", n)
	}

	slow := newRig(t, fake.Options{}, func(o *Options) { o.ShutdownCheckpoint = 50 * time.Millisecond })
	slow.cp.answer = func(ctx context.Context, a ask) (checkpointer.Outcome, error) {
		<-ctx.Done()
		return checkpointer.Outcome{}, ctx.Err()
	}
	l := slow.start()
	slow.ctl.Shutdown(slow.ctx)
	if !slow.log.has("session " + l.ID + ": the before_shutdown checkpoint did not finish within") {
		t.Errorf("a checkpoint past the limit was not named: %q", slow.log.lines)
	}
}

// TestBeforeNativeResume: a native resume is preceded by a
// before_native_resume checkpoint when the harness program's version
// changed since it last ran the session, or when the session's last
// boundary is more entries behind its head than allowed; otherwise
// nothing. A suppressed checkpoint lets the resume go on; a failed one
// stops it.
func TestBeforeNativeResume(t *testing.T) {
	r := newRig(t, fake.Options{}, func(o *Options) { o.RiskyResumeEntries = 3 })
	h := r.host
	sess := r.session()
	r.hosts.setVersion("1.0")
	r.ctl.RecordHarnessVersion(r.ctx, h, sess.ID)
	if got, err := r.ctl.BeforeNativeResume(r.ctx, h, sess); err != nil || got.ID != sess.ID || len(r.cp.asks()) != 0 {
		t.Fatalf("a resume by the same version with no entries = %v, %d checkpoints; want none", err, len(r.cp.asks()))
	}

	r.hosts.setVersion("2.0")
	if _, err := r.ctl.BeforeNativeResume(r.ctx, h, sess); err != nil {
		t.Fatal(err)
	}
	if a := r.asked(t); a.sessionID != sess.ID || a.req.Reason != checkpoint.ReasonBeforeNativeResume {
		t.Errorf("after a version change the controller asked %+v, want before_native_resume", a)
	}
	if !r.log.has(`the harness version changed from "1.0" to "2.0"`) {
		t.Errorf("the reason was not logged: %q", r.log.lines)
	}

	r.hosts.setVersion("1.0")
	var es []core.NewEntry
	for range 5 {
		es = append(es, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(core.UserMessagePayload{Text: "more"})})
	}
	if _, err := r.db.Append(r.ctx, sess.ID, es...); err != nil {
		t.Fatal(err)
	}
	sess, err := r.db.GetSession(r.ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	r.cp.answer = func(context.Context, ask) (checkpointer.Outcome, error) {
		return checkpointer.Outcome{}, refusal(checkpoint.SuppressedNoWork)
	}
	if _, err := r.ctl.BeforeNativeResume(r.ctx, h, sess); err != nil {
		t.Errorf("a suppressed checkpoint stopped the resume: %v", err)
	}
	if a := r.asked(t); a.req.Reason != checkpoint.ReasonBeforeNativeResume {
		t.Errorf("5 entries past a limit of 3 asked %+v, want before_native_resume", a)
	}
	failed := errors.New("the record could not be read")
	r.cp.answer = func(context.Context, ask) (checkpointer.Outcome, error) { return checkpointer.Outcome{}, failed }
	if _, err := r.ctl.BeforeNativeResume(r.ctx, h, sess); !errors.Is(err, failed) {
		t.Errorf("a failed checkpoint gave %v, want the resume stopped with it", err)
	}
}

// asked takes the next Checkpoint call, which must have been made already.
func (r *rig) asked(t *testing.T) ask {
	t.Helper()
	select {
	case a := <-r.cp.calls:
		return a
	default:
		t.Fatal("the controller asked for no checkpoint")
	}
	return ask{}
}

// TestCompact: session/compact runs the harness's own compaction command
// where it has one (the context.compacted entry it recorded is the
// answer's), saying when a focus was not applied; without one it falls
// back to a manual Bridge checkpoint carrying the focus. A running turn
// or a pending checkpoint refuses it.
func TestCompact(t *testing.T) {
	t.Run("harness command", func(t *testing.T) {
		r := newRig(t, fake.Options{}, nil)
		l := r.start()
		out, err := r.ctl.Compact(r.ctx, l.ID, "the parser")
		if err != nil {
			t.Fatal(err)
		}
		if out.By != "harness" || out.FocusApplied || out.FocusNote == "" {
			t.Errorf("Compact = %+v, want by harness, the focus reported not applied with a note", out)
		}
		es, err := r.db.ActiveBranch(r.ctx, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 || es[len(es)-1].Kind != core.KindContextCompacted || es[len(es)-1].ID != out.EntryID {
			t.Errorf("Compact named entry %q; the record ends with %v", out.EntryID, es)
		}
		if len(r.cp.asks()) != 0 {
			t.Error("a harness compaction also asked for a Bridge checkpoint")
		}
	})
	t.Run("focus applied", func(t *testing.T) {
		r := newRig(t, fake.Options{CompactFocus: true}, nil)
		l := r.start()
		if out, err := r.ctl.Compact(r.ctx, l.ID, "the parser"); err != nil || !out.FocusApplied || out.FocusNote != "" {
			t.Errorf("Compact = %+v, %v; want the focus applied", out, err)
		}
	})
	t.Run("fallback", func(t *testing.T) {
		r := newRig(t, fake.Options{Missing: []string{core.CapCompactCommand}}, nil)
		sess := r.session()
		out, err := r.ctl.Compact(r.ctx, sess.ID, "the parser")
		if err != nil {
			t.Fatal(err)
		}
		if a := r.asked(t); a.req.Reason != checkpoint.ReasonManual || a.req.Focus != "the parser" {
			t.Errorf("the fallback asked %+v, want a manual checkpoint with the focus", a.req)
		}
		if out.By != "bridge" || out.EntryID != "e_checkpoint" || !out.FocusApplied || out.FocusNote == "" {
			t.Errorf("Compact = %+v, want by bridge, the checkpoint's entry, the focus applied with a note", out)
		}
	})
	t.Run("busy", func(t *testing.T) {
		r := newRig(t, fake.Options{}, nil)
		l := r.start()
		if !l.Turn.TryLock() {
			t.Fatal("the new session's turn is taken")
		}
		_, err := r.ctl.Compact(r.ctx, l.ID, "")
		l.Turn.Unlock()
		if core.ErrorCode(err) != core.CodeBusy {
			t.Errorf("Compact during a turn = %v, want busy", err)
		}
		r.cp.pendingErr = core.Errorf(core.CodeBusy, "a checkpoint request is pending")
		if _, err := r.ctl.Compact(r.ctx, l.ID, ""); err != r.cp.pendingErr {
			t.Errorf("Compact with a checkpoint pending = %v, want its refusal", err)
		}
		if es, _ := r.db.ActiveBranch(r.ctx, l.ID); len(es) != 0 {
			t.Errorf("a refused compaction recorded %v", es)
		}
	})
}

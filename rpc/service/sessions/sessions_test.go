package sessions

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/schema"
)

// failingStart is the fake harness whose sessions cannot be started.
type failingStart struct{ *fake.Host }

func (failingStart) CreateSession(context.Context, core.CreateRequest, core.EventSink) (core.Live, error) {
	return nil, errors.New("the harness program exited at once")
}

// TestCreate: a new session is recorded with the harness's own id once its
// harness runs, under a lease, its harness version noted; when the
// harness cannot be started nothing is recorded, the workspace is undone
// and the lease given back.
func TestCreate(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	if s.ID == "" || s.NativeSessionID == "" || s.Harness != fake.Harness {
		t.Errorf("Create = %+v, want a recorded session of the fake harness with its native id", s)
	}
	if r.lives.Get(s.ID) == nil || !r.leases.holds(s.ID) {
		t.Error("the new session's harness does not run under a lease")
	}
	if r.ctl.versions != 1 {
		t.Errorf("the controller was told of %d harness versions, want 1", r.ctl.versions)
	}

	bad := newRig(t, rigOptions{wrap: func(h *fake.Host) core.BridgeHost { return failingStart{h} }})
	_, err := bad.s.Create(bad.ctx, schema.SessionCreateParams{Harness: fake.Harness, Cwd: t.TempDir()})
	if err == nil {
		t.Fatal("Create succeeded with a harness that cannot start")
	}
	if list, _, _ := bad.db.ListSessions(bad.ctx, core.ListQuery{}); len(list) != 0 {
		t.Errorf("a session whose harness never started was recorded: %+v", list)
	}
	if bad.ws.dropped != 1 || len(bad.leases.held) != 0 {
		t.Errorf("after the failed start: %d workspaces undone, leases %v; want 1 and none", bad.ws.dropped, bad.leases.held)
	}

	if _, err := r.s.Create(r.ctx, schema.SessionCreateParams{Harness: fake.Harness}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("Create without cwd = %v, want invalid", err)
	}
}

// TestPromptRunsATurn: a prompt records the user's message and the
// harness's answer in order, and tells the controller how many plan steps
// the turn completed.
func TestPromptRunsATurn(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	res, err := r.s.Prompt(r.ctx, schema.SessionPromptParams{SessionID: s.ID}, text("plan completed:write the test\nsay done"))
	if err != nil || res.StopReason != "end_turn" || res.Queued {
		t.Fatalf("Prompt = %+v, %v; want end_turn, not queued", res, err)
	}
	if got := said(t, r.record(s.ID)); !reflect.DeepEqual(got, []string{"user: plan completed:write the test\nsay done", "assistant: done"}) {
		t.Errorf("the record says %q", got)
	}
	if !reflect.DeepEqual(r.ctl.afterTurns, []int{1}) {
		t.Errorf("the controller heard of turns completing %v steps, want [1]", r.ctl.afterTurns)
	}
	if _, err := r.s.Prompt(r.ctx, schema.SessionPromptParams{SessionID: s.ID}, nil); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("an empty prompt = %v, want invalid", err)
	}
	r.ws.gone = core.Errorf(core.CodeNotFound, "the worktree was removed")
	if _, err := r.s.Prompt(r.ctx, schema.SessionPromptParams{SessionID: s.ID}, text("say again")); err != r.ws.gone {
		t.Errorf("a prompt to a session whose worktree is gone = %v, want its refusal", err)
	}
}

// hanging is a fake harness whose prompt "first" runs until cancelled;
// running is closed when it has begun.
func hanging(running chan struct{}) fake.Options {
	return fake.Options{Script: func(prompt string) []fake.Step {
		if prompt == "first" {
			close(running)
			return []fake.Step{fake.Hang()}
		}
		return nil
	}}
}

// TestPromptQueuedBehindARunningTurn: a prompt sent while a turn runs
// waits in the queue and runs when that turn ends (here, cancelled), its
// message recorded after the first turn's.
func TestPromptQueuedBehindARunningTurn(t *testing.T) {
	running := make(chan struct{})
	r := newRig(t, rigOptions{fake: hanging(running)})
	s := r.create()
	type result struct {
		res schema.SessionPromptResult
		err error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() {
		res, err := r.s.Prompt(r.ctx, schema.SessionPromptParams{SessionID: s.ID, PromptID: "p1"}, text("first"))
		first <- result{res, err}
	}()
	<-running
	<-r.queued // p1
	go func() {
		res, err := r.s.Prompt(r.ctx, schema.SessionPromptParams{SessionID: s.ID, PromptID: "p2"}, text("say second"))
		second <- result{res, err}
	}()
	if id := <-r.queued; id != "p2" {
		t.Fatalf("queued %s, want p2", id)
	}
	if err := r.s.Cancel(r.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	a, b := <-first, <-second
	if a.err != nil || a.res.StopReason != "cancelled" || a.res.PromptID != "p1" {
		t.Errorf("the cancelled prompt = %+v, %v; want p1 cancelled", a.res, a.err)
	}
	if b.err != nil || b.res.StopReason != "end_turn" || !b.res.Queued || b.res.PromptID != "p2" {
		t.Errorf("the queued prompt = %+v, %v; want p2, queued, end_turn", b.res, b.err)
	}
	if got := said(t, r.record(s.ID)); !reflect.DeepEqual(got, []string{"user: first", "user: say second", "assistant: second"}) {
		t.Errorf("the record says %q", got)
	}
}

// TestPromptSteered: with steer, a prompt sent while a turn runs goes into
// that turn at once (answered "steered"), recorded as a steered user
// message in order with the turn's events; with no turn running it runs
// as a turn of its own; a harness that cannot take input mid-turn refuses
// it before anything is recorded.
func TestPromptSteered(t *testing.T) {
	running := make(chan struct{})
	r := newRig(t, rigOptions{fake: hanging(running)})
	s := r.create()
	if res, err := r.s.Prompt(r.ctx, schema.SessionPromptParams{SessionID: s.ID, Steer: true}, text("say alone")); err != nil || res.StopReason != "end_turn" {
		t.Errorf("a steered prompt with no turn running = %+v, %v; want a turn of its own", res, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.s.Prompt(r.ctx, schema.SessionPromptParams{SessionID: s.ID}, text("first"))
		done <- err
	}()
	<-running
	res, err := r.s.Prompt(r.ctx, schema.SessionPromptParams{SessionID: s.ID, Steer: true}, text("go left"))
	if err != nil || res.StopReason != schema.StopSteered || res.Queued {
		t.Errorf("the steered prompt = %+v, %v; want steered at once", res, err)
	}
	if err := r.s.Cancel(r.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"user: say alone", "assistant: alone", "user: first", "user (steered): go left", "assistant: fake steered: go left"}
	if got := said(t, r.record(s.ID)); !reflect.DeepEqual(got, want) {
		t.Errorf("the record says %q, want %q", got, want)
	}

	running2 := make(chan struct{})
	o := hanging(running2)
	o.Missing = []string{core.CapPromptSteer}
	n := newRig(t, rigOptions{fake: o})
	s2 := n.create()
	go func() { _, _ = n.s.Prompt(n.ctx, schema.SessionPromptParams{SessionID: s2.ID}, text("first")) }()
	<-running2
	_, err = n.s.Prompt(n.ctx, schema.SessionPromptParams{SessionID: s2.ID, Steer: true}, text("go left"))
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != core.CodeUnavailable || !reflect.DeepEqual(ce.Missing, []string{core.CapPromptSteer}) {
		t.Errorf("steering a harness without prompt.steer = %v, want unavailable naming %s", err, core.CapPromptSteer)
	}
	if got := said(t, n.record(s2.ID)); !reflect.DeepEqual(got, []string{"user: first"}) {
		t.Errorf("the refused steer left %q in the record", got)
	}
	if err := n.s.Cancel(n.ctx, s2.ID); err != nil {
		t.Fatal(err)
	}
}

// TestCancelArchiveHistory: cancelling an idle session is no error;
// archiving stops its harness, removes its worktree and keeps the record,
// after which it takes no prompt and no resume; history pages the record
// backwards and refuses bad arguments.
func TestCancelArchiveHistory(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	if err := r.s.Cancel(r.ctx, s.ID); err != nil {
		t.Errorf("cancelling an idle session = %v", err)
	}
	if err := r.s.Cancel(r.ctx, "s_missing"); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("cancelling an unknown session = %v, want not_found", err)
	}
	for _, p := range []string{"say one", "say two"} {
		if _, err := r.s.Prompt(r.ctx, schema.SessionPromptParams{SessionID: s.ID}, text(p)); err != nil {
			t.Fatal(err)
		}
	}
	es, more, err := r.s.History(r.ctx, s.ID, 0, 1)
	if err != nil || !more || len(es) == 0 || said(t, es)[len(said(t, es))-1] != "assistant: two" {
		t.Errorf("the newest page = %q, more %v, %v; want it to end with the newest answer and say more", said(t, es), more, err)
	}
	older, _, err := r.s.History(r.ctx, s.ID, es[0].Seq, 0)
	if err != nil || len(older) == 0 || older[len(older)-1].Seq >= es[0].Seq {
		t.Errorf("the page before seq %d = %d entries, %v", es[0].Seq, len(older), err)
	}
	for _, c := range []struct {
		id          string
		before      int64
		max         int
		code        core.Code
		description string
	}{
		{s.ID, -1, 0, core.CodeInvalid, "a negative beforeSeq"},
		{s.ID, 0, -1, core.CodeInvalid, "a negative maxMessages"},
		{"", 0, 0, core.CodeInvalid, "no session id"},
		{"s_missing", 0, 0, core.CodeNotFound, "an unknown session"},
	} {
		if _, _, err := r.s.History(r.ctx, c.id, c.before, c.max); core.ErrorCode(err) != c.code {
			t.Errorf("history with %s = %v, want %s", c.description, err, c.code)
		}
	}

	l := r.lives.Get(s.ID)
	if err := r.s.Archive(r.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if l.Alive() || r.lives.Get(s.ID) != nil {
		t.Error("the archived session's harness still runs")
	}
	if !reflect.DeepEqual(r.ws.archived, []string{s.ID}) {
		t.Errorf("worktrees removed for %v, want %s", r.ws.archived, s.ID)
	}
	got, err := r.db.GetSession(r.ctx, s.ID)
	if err != nil || !got.Archived || len(said(t, r.record(s.ID))) != 4 {
		t.Errorf("after archiving: %+v, %v, %d messages; want it archived with its 4 messages", got, err, len(said(t, r.record(s.ID))))
	}
	if _, err := r.s.Prompt(r.ctx, schema.SessionPromptParams{SessionID: s.ID}, text("say more")); err == nil || !strings.Contains(err.Error(), "archived") {
		t.Errorf("a prompt to an archived session = %v, want it refused as archived", err)
	}
	if _, err := r.s.Resume(r.ctx, s.ID, false); err == nil || !strings.Contains(err.Error(), "archived") {
		t.Errorf("resuming an archived session = %v, want it refused as archived", err)
	}
}

// failingResume is the fake harness whose native resume fails.
type failingResume struct{ *fake.Host }

func (failingResume) Resume(context.Context, core.ResumeRequest, core.EventSink) (core.Live, error) {
	return nil, &core.ResumeError{NativeText: "no conversation found with that id"}
}

// TestResume: a running session comes back hot; a stopped one natively
// (after the controller looked at the risk); when the native resume fails
// it is recorded, and the session is restored from its checkpoint when one
// exists, or starts fresh saying why; fresh on request; a session another
// process drives is refused before anything starts. Each outcome is
// recorded, kept on the head and told to the client.
func TestResume(t *testing.T) {
	check := func(t *testing.T, r *rig, id string, got rigRestored, want core.RestoreMode) {
		t.Helper()
		if got.err != nil || got.mode != want {
			t.Fatalf("Resume = %s, %v; want %s", got.mode, got.err, want)
		}
		head, err := r.db.GetSession(r.ctx, id)
		if err != nil || head.RestoreMode != string(want) {
			t.Errorf("the head says %q, %v; want %s", head.RestoreMode, err, want)
		}
		es := r.record(id)
		if last := es[len(es)-1]; last.Kind != core.KindSessionRestored || !strings.Contains(string(last.Payload), `"mode":"`+string(want)+`"`) {
			t.Errorf("the record ends with %s %s, want session.restored %s", last.Kind, last.Payload, want)
		}
		if n := len(r.client.restores); n == 0 || r.client.restores[n-1].Mode != want {
			t.Errorf("the client was told %+v, want %s last", r.client.restores, want)
		}
		if r.lives.Get(id) == nil {
			t.Error("the resumed session's harness does not run")
		}
	}
	t.Run("hot, native, fresh", func(t *testing.T) {
		r := newRig(t, rigOptions{})
		s := r.create()
		check(t, r, s.ID, resume(r, s.ID, false), core.ModeHot)
		_ = r.lives.Get(s.ID).Close(r.ctx)
		check(t, r, s.ID, resume(r, s.ID, false), core.ModeNative)
		if r.ctl.nativeAsked != 1 || r.ctl.idleClocks != 1 {
			t.Errorf("the controller looked at %d native resumes and started %d idle clocks, want 1 each", r.ctl.nativeAsked, r.ctl.idleClocks)
		}
		check(t, r, s.ID, resume(r, s.ID, true), core.ModeFresh)
	})
	t.Run("native fails, checkpoint", func(t *testing.T) {
		proj := &checkpoint.Projection{CheckpointEntryID: "e_cp", Checkpoint: checkpoint.Checkpoint{Summary: "the parser is half done"}}
		r := newRig(t, rigOptions{wrap: func(h *fake.Host) core.BridgeHost { return failingResume{h} }, proj: proj})
		s := r.create()
		_ = r.lives.Get(s.ID).Close(r.ctx)
		got := resume(r, s.ID, false)
		check(t, r, s.ID, got, core.ModeCheckpointRestored)
		if got.r.CheckpointEntryID != "e_cp" || got.r.NativeError != "no conversation found with that id" {
			t.Errorf("Resume = %+v, want the checkpoint e_cp and the harness's error", got.r)
		}
		var failed, injected bool
		for _, e := range r.record(s.ID) {
			failed = failed || e.Kind == core.KindSessionResumeFail
			injected = injected || (e.Kind == core.KindUserMessage && strings.Contains(string(e.Payload), "the parser is half done"))
		}
		if !failed || !injected {
			t.Errorf("resume_failed recorded: %v, the checkpoint injected: %v; want both", failed, injected)
		}
	})
	t.Run("native fails, no checkpoint", func(t *testing.T) {
		r := newRig(t, rigOptions{wrap: func(h *fake.Host) core.BridgeHost { return failingResume{h} }})
		s := r.create()
		_ = r.lives.Get(s.ID).Close(r.ctx)
		got := resume(r, s.ID, false)
		check(t, r, s.ID, got, core.ModeFresh)
		if !strings.HasPrefix(got.r.Reason, "native resume failed; no valid checkpoint") {
			t.Errorf("the fresh start says %q, want why", got.r.Reason)
		}
	})
	t.Run("driven elsewhere", func(t *testing.T) {
		r := newRig(t, rigOptions{})
		s := r.create()
		_ = r.lives.Get(s.ID).Close(r.ctx)
		before := len(r.record(s.ID))
		r.leases.refused[s.ID] = true
		if got := resume(r, s.ID, false); core.ErrorCode(got.err) != core.CodeLiveElsewhere {
			t.Errorf("Resume = %s, %v; want live_elsewhere", got.mode, got.err)
		}
		if r.lives.Get(s.ID) != nil || len(r.record(s.ID)) != before {
			t.Error("a refused resume started the harness or recorded something")
		}
	})
}

type rigRestored struct {
	r    schema.RestoredNotification
	mode core.RestoreMode
	err  error
}

func resume(r *rig, id string, fresh bool) rigRestored {
	got, err := r.s.Resume(r.ctx, id, fresh)
	return rigRestored{got, got.Mode, err}
}

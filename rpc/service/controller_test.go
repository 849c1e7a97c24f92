package service_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

// cpReply is a usable checkpoint reply queued for the next prompt.
func cpReply(summary string) string {
	return fmt.Sprintf("next json {\"summary\": %q}", summary)
}

// savedWith returns the checkpointSaved notifications of reason.
func (r *rig) savedWith(reason string) []string {
	var out []string
	for _, s := range r.rec.Saved {
		if string(s.Reason) == reason {
			out = append(out, s.EntryID)
		}
	}
	return out
}

// TestPhaseBoundaryAfterTurn: a turn that completed a plan step is followed,
// after it ends, by a phase_boundary checkpoint; a turn whose plan completed
// nothing new is not.
func TestPhaseBoundaryAfterTurn(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	r.prompt(s.ID, "plan in_progress:parse; pending:test\nsay started")
	if b := r.branch(s.ID); strings.Contains(strings.Join(kinds(b), ","), "compaction.requested") {
		t.Fatalf("no step was completed, yet a checkpoint was requested: %v", kinds(b))
	}
	r.prompt(s.ID, "plan completed:parse; in_progress:test\nsay parser done\n"+cpReply("PHASE-1 parser done"))
	r.rec.Await(t, "a phase_boundary checkpoint", func() bool {
		for _, x := range r.rec.Saved {
			if x.Reason == "phase_boundary" {
				return true
			}
		}
		return false
	})
	b := r.branch(s.ID)
	turnEnd, req := -1, -1
	for i, e := range b {
		switch {
		case e.Kind == core.KindAssistantMessage && payload(t, e)["text"] == "parser done":
			turnEnd = i
		case e.Kind == core.KindCompactionRequest && req < 0:
			req = i
			if payload(t, e)["reason"] != "phase_boundary" {
				t.Errorf("request %s", e.Payload)
			}
		}
	}
	if turnEnd < 0 || req < turnEnd {
		t.Fatalf("the phase_boundary request (at %d) must come after the turn (ending at %d): %v", req, turnEnd, kinds(b))
	}
	if cp := payload(t, b[len(b)-3]); cp["summary"] != "PHASE-1 parser done" || cp["reason"] != "phase_boundary" {
		t.Fatalf("checkpoint %v", cp)
	}
	// The same step reported completed again is not a new boundary.
	r.prompt(s.ID, "plan completed:parse; in_progress:test\nsay still testing")
	if n := len(r.savedWith("phase_boundary")); n != 1 {
		t.Fatalf("%d phase_boundary checkpoints, want 1", n)
	}
}

// TestSuspendAndComeBack: session/suspend checkpoints the session
// (before_suspend), stops its process and records "suspended"; the next
// prompt brings it back natively.
func TestSuspendAndComeBack(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		r := newRig(t, rigOptions{open: open})
		s := r.create()
		r.prompt(s.ID, "say working on the parser\n"+cpReply("SUSPEND-1"))
		out, err := suspendOf(r, s.ID)
		if err != nil || !out.Suspended || out.CheckpointEntryID == "" {
			t.Fatalf("Suspend = %+v, %v: want suspended with a checkpoint", out, err)
		}
		b := r.branch(s.ID)
		if last := b[len(b)-1]; last.Kind != core.KindSessionStatus || payload(t, last)["status"] != "suspended" {
			t.Fatalf("record ends with %v", kinds(b[len(b)-4:]))
		}
		if got := r.savedWith("before_suspend"); len(got) != 1 || got[0] != out.CheckpointEntryID {
			t.Fatalf("checkpointSaved %v", r.rec.Saved)
		}
		// Suspending again is a no-op: no process runs.
		if again, err := suspendOf(r, s.ID); err != nil || again.Suspended {
			t.Fatalf("second Suspend = %+v, %v", again, err)
		}
		r.prompt(s.ID, "say back again")
		if n := len(r.rec.Restores); n != 1 || r.rec.Restores[0].Mode != core.ModeNative {
			t.Fatalf("restores %+v, want one native", r.rec.Restores)
		}
	})
}

// TestIdleSuspension: a live session left idle for the configured time is
// checkpointed and suspended on its own.
func TestIdleSuspension(t *testing.T) {
	r := newRig(t, rigOptions{suspendAfter: 150 * time.Millisecond})
	s := r.create()
	r.prompt(s.ID, "say idle soon\n"+cpReply("IDLE-1"))
	r.rec.Await(t, "the suspension", func() bool {
		for _, e := range r.rec.Entries {
			if e.SessionID == s.ID && e.Kind == core.KindSessionStatus && strings.Contains(string(e.Payload), `"suspended"`) {
				return true
			}
		}
		return false
	})
	if got := r.savedWith("before_suspend"); len(got) != 1 {
		t.Fatalf("checkpointSaved %+v, want one before_suspend", r.rec.Saved)
	}
	if !strings.Contains(string(r.branch(s.ID)[len(r.branch(s.ID))-1].Payload), `"by":"idle"`) {
		t.Errorf("the suspension does not say it was idle")
	}
	r.prompt(s.ID, "say awake")
	if len(r.rec.Restores) != 1 || r.rec.Restores[0].Mode != core.ModeNative {
		t.Fatalf("restores %+v", r.rec.Restores)
	}
}

// TestShutdownCheckpoints: Close gives every live session with new work a
// before_shutdown checkpoint; one with nothing new gets none; one whose
// reply never comes is left after the limit, with a log line saying so.
func TestShutdownCheckpoints(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, rigOptions{shutdownCheckpoints: true, shutdownLimit: 2 * time.Second, timeout: time.Minute})
	var worked []string
	for i := 0; i < 3; i++ {
		s := r.create()
		r.prompt(s.ID, fmt.Sprintf("say task %d\n%s", i, cpReply(fmt.Sprintf("SHUT-%d", i))))
		worked = append(worked, s.ID)
	}
	idle := r.create()
	hung := r.create()
	r.prompt(hung.ID, "say about to hang\nnext hang")
	start := time.Now()
	if err := r.svc.Close(ctx); err != nil {
		t.Logf("Close: %v", err)
	}
	t.Logf("Close took %s", time.Since(start))
	got := map[string]bool{}
	for _, x := range r.rec.Saved {
		if x.Reason != "before_shutdown" {
			t.Errorf("saved %+v", x)
		}
		got[x.SessionID] = true
	}
	for _, id := range worked {
		if !got[id] {
			t.Errorf("session %s got no before_shutdown checkpoint (saved %+v)", id, r.rec.Saved)
		}
	}
	if got[idle.ID] || got[hung.ID] {
		t.Errorf("saved %+v: the idle session has nothing to save and the hung one never answered", r.rec.Saved)
	}
	left := false
	for _, l := range r.rec.Logs {
		left = left || (strings.Contains(l, hung.ID) && strings.Contains(l, "left as it is"))
	}
	if !left {
		t.Errorf("no log line says the hung session was left: %q", r.rec.Logs)
	}
}

// TestShutdownCheckpointOff: NoShutdownCheckpoint writes none.
func TestShutdownCheckpointOff(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	r.prompt(s.ID, "say task\n"+cpReply("NOPE"))
	r.svc.Close(context.Background())
	if len(r.rec.Saved) != 0 {
		t.Fatalf("saved %+v with checkpointOnShutdown off", r.rec.Saved)
	}
}

// versioned is the fake host reporting another program version.
type versioned struct {
	*fake.Host
	version string
}

func (v versioned) Probe(ctx context.Context) core.Probe {
	p := v.Host.Probe(ctx)
	p.Version = v.version
	return p
}

// TestRiskyNativeResume: a changed harness version, or a boundary too far
// behind the head, makes resume write a before_native_resume checkpoint
// (rebuilt from the record) before the native attempt.
func TestRiskyNativeResume(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		for _, tc := range []struct {
			name   string
			second rigOptions
		}{
			{"version changed", rigOptions{open: open, wrap: func(h *fake.Host) core.BridgeHost { return versioned{h, "fake 2"} }}},
			{"too many entries since the boundary", rigOptions{open: open, riskyEntries: 2}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				state := t.TempDir()
				r := newRig(t, rigOptions{open: open, fake: fake.Options{StateDir: state}})
				s := r.create()
				r.prompt(s.ID, "say one\ntool Read a.go\nsay two")
				r.svc.Close(ctx)
				o := tc.second
				o.db, o.fake = r.db, fake.Options{StateDir: state}
				r2 := newRig(t, o)
				res, err := r2.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
				if err != nil || res.Mode != core.ModeNative {
					t.Fatalf("Resume = %+v, %v: want native", res, err)
				}
				if len(r2.rec.Saved) != 1 || r2.rec.Saved[0].Reason != "before_native_resume" || r2.rec.Saved[0].Provenance != "reconstructed" {
					t.Fatalf("saved %+v: want one reconstructed before_native_resume", r2.rec.Saved)
				}
				b := r2.branch(s.ID)
				cp, restored := -1, -1
				for i, e := range b {
					if e.Kind == core.KindCheckpoint {
						cp = i
					}
					if e.Kind == core.KindSessionRestored {
						restored = i
					}
				}
				if cp < 0 || restored < cp {
					t.Fatalf("the checkpoint (at %d) must precede the native restoration (at %d): %v", cp, restored, kinds(b))
				}
			})
		}
		// Same version, few entries: no checkpoint.
		state := t.TempDir()
		r := newRig(t, rigOptions{open: open, fake: fake.Options{StateDir: state}})
		s := r.create()
		r.prompt(s.ID, "say one")
		r.svc.Close(ctx)
		r2 := newRig(t, rigOptions{db: r.db, fake: fake.Options{StateDir: state}})
		if res, err := r2.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID}); err != nil || res.Mode != core.ModeNative || len(r2.rec.Saved) != 0 {
			t.Fatalf("Resume = %+v, %v, saved %+v: a safe native resume needs no checkpoint", res, err, r2.rec.Saved)
		}
	})
}

// TestEveryTriggerEverySuppression: each automatic trigger the controller
// raises (phase_boundary, before_suspend, before_shutdown,
// before_native_resume) under each suppression: the checkpoint is not
// written and the log names the rule; a dead process's rebuild
// (before_native_resume) is not stopped by a tool left open.
func TestEveryTriggerEverySuppression(t *testing.T) {
	ctx := context.Background()
	type setup struct {
		rule   checkpoint.Suppression
		preset string
		script string // the prompt of the turn that makes the state
		extra  []core.NewEntry
	}
	setups := []setup{
		{rule: checkpoint.SuppressedWorkerDone, script: "plan completed:review\nsay reviewing\ndecide nothing to change"},
		{rule: checkpoint.SuppressedToolInFlight, script: "plan completed:build\nsay building\ntoolstart Bash make"},
		{rule: checkpoint.SuppressedApproval, script: "plan completed:edit\nsay editing",
			extra: []core.NewEntry{{Kind: core.KindApprovalRequested, Payload: core.Payload(map[string]any{"approvalId": "ap1"})}}},
		{rule: checkpoint.SuppressedDirectChat, preset: service_DirectChat, script: "plan completed:chat\nsay chatting"},
		{rule: checkpoint.SuppressedNoWork, script: "say shipped\n" + cpReply("FIRST")},
	}
	triggers := []string{"phase_boundary", "before_suspend", "before_shutdown", "before_native_resume"}
	for _, trig := range triggers {
		for _, su := range setups {
			t.Run(trig+"/"+string(su.rule), func(t *testing.T) {
				state := t.TempDir()
				o := rigOptions{fake: fake.Options{StateDir: state}, shutdownCheckpoints: trig == "before_shutdown",
					presets: []core.Preset{{Name: service_DirectChat, Harness: "fake"}}}
				r := newRig(t, o)
				s, err := createWith(r, su.preset)
				if err != nil {
					t.Fatal(err)
				}
				base := 0
				if su.rule == checkpoint.SuppressedNoWork {
					// A first boundary, then nothing new.
					r.prompt(s.ID, su.script)
					if _, err := checkpointOf(r, s.ID, "manual"); err != nil {
						t.Fatal(err)
					}
					base = 1
					if trig == "phase_boundary" {
						// A turn that completes a step but adds nothing
						// meaningful cannot be made with the fake; the
						// boundary itself is the state.
						if _, err := checkpointOf(r, s.ID, trig); suppressedOf(err) != su.rule {
							t.Fatalf("phase_boundary right after a boundary: %v", err)
						}
						return
					}
				} else {
					script := su.script
					if trig != "phase_boundary" {
						// Only phase_boundary is raised by a completed step.
						_, script, _ = strings.Cut(script, "\n")
					}
					if trig == "phase_boundary" && len(su.extra) > 0 {
						r.prompt(s.ID, "say before")
						if _, err := r.db.Append(ctx, s.ID, su.extra...); err != nil {
							t.Fatal(err)
						}
					}
					if _, err := r.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.ID, Content: []schema.Content{{Type: "text", Text: script}}}); err != nil {
						t.Fatal(err)
					}
					if trig != "phase_boundary" && len(su.extra) > 0 {
						if _, err := r.db.Append(ctx, s.ID, su.extra...); err != nil {
							t.Fatal(err)
						}
					}
				}
				want := su.rule
				switch trig {
				case "phase_boundary":
					r.rec.Await(t, "the phase_boundary decision", func() bool { return logged(r.rec.Logs, "phase_boundary suppressed") })
				case "before_suspend":
					out, err := suspendOf(r, s.ID)
					if su.rule == checkpoint.SuppressedToolInFlight || su.rule == checkpoint.SuppressedApproval {
						if core.ErrorCode(err) != core.CodeBusy {
							t.Fatalf("Suspend mid-tool or mid-approval = %+v, %v: want busy", out, err)
						}
						return
					}
					if err != nil || !out.Suspended || out.Suppressed != want {
						t.Fatalf("Suspend = %+v, %v: want suspended without a checkpoint (%s)", out, err, want)
					}
				case "before_shutdown":
					r.svc.Close(ctx)
				case "before_native_resume":
					r.svc.Close(ctx)
					r2 := newRig(t, rigOptions{db: r.db, fake: fake.Options{StateDir: state}, riskyEntries: 1,
						presets: o.presets})
					res, err := r2.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
					if err != nil || res.Mode != core.ModeNative {
						t.Fatalf("Resume = %+v, %v", res, err)
					}
					if su.rule == checkpoint.SuppressedToolInFlight {
						// A dead process has nothing in flight: the rebuild fires.
						if len(r2.rec.Saved) != 1 || string(r2.rec.Saved[0].Reason) != trig {
							t.Fatalf("saved %+v: a tool left by a dead process must not stop the rebuild", r2.rec.Saved)
						}
						return
					}
					r, base = r2, 0
				}
				if len(r.rec.Saved) != base {
					t.Fatalf("%s fired under %s: %+v", trig, su.rule, r.rec.Saved)
				}
				if trig != "before_suspend" && !logged(r.rec.Logs, trig+" suppressed ("+string(want)+")") {
					t.Fatalf("no log line names %s suppressed by %s: %q", trig, want, r.rec.Logs)
				}
			})
		}
	}
}

// service_DirectChat is the direct chat preset.
const service_DirectChat = service.DirectChatPreset

func createWith(r *rig, preset string) (core.Session, error) {
	out, err := r.svc.SessionCreate(context.Background(), schema.SessionCreateParams{Harness: "fake", Cwd: r.t.TempDir(), Preset: preset})
	if err != nil {
		return core.Session{}, err
	}
	return r.db.GetSession(context.Background(), out.SessionID)
}

func suspendOf(r *rig, id string) (schema.SessionSuspendResult, error) {
	return r.svc.SessionSuspend(context.Background(), schema.SessionSuspendParams{SessionID: id})
}

func checkpointOf(r *rig, id, reason string) (schema.SessionCheckpointResult, error) {
	return r.svc.SessionCheckpoint(context.Background(), schema.SessionCheckpointParams{SessionID: id, Reason: schema.CheckpointReason(reason)})
}

func logged(logs []string, sub string) bool {
	for _, l := range logs {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

func suppressedOf(err error) checkpoint.Suppression {
	var e *checkpoint.SuppressedError
	if !errors.As(err, &e) {
		return ""
	}
	return e.Rule
}

// TestPromptDuringIdleSuspension: a prompt that arrives while an idle
// suspension is checkpointing is not refused: it waits, and runs on a
// running process (the suspension gave way, or the session came back).
func TestPromptDuringIdleSuspension(t *testing.T) {
	ctx := context.Background()
	slow := []fake.Step{{Op: fake.OpSleep, Wait: 400 * time.Millisecond}, jsonStep(`{"summary": "idle checkpoint"}`)}
	r := newRig(t, rigOptions{suspendAfter: 100 * time.Millisecond, timeout: time.Minute,
		fake: fake.Options{Script: scriptFor(map[string][]fake.Step{"Bridge checkpoint request": slow})}})
	s := r.create()
	r.prompt(s.ID, "say work before the idle time")
	r.rec.Await(t, "the idle checkpoint request", func() bool {
		for _, e := range r.rec.Entries {
			if e.SessionID == s.ID && e.Kind == core.KindCompactionRequest {
				return true
			}
		}
		return false
	})
	out, err := r.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.ID, Content: []schema.Content{{Type: "text", Text: "say during the suspension"}}})
	if err != nil {
		t.Fatalf("prompt during an idle suspension: %v", err)
	}
	if out.StopReason != "end_turn" {
		t.Fatalf("stop reason %q", out.StopReason)
	}
	b := r.branch(s.ID)
	found := false
	for _, e := range b {
		found = found || (e.Kind == core.KindAssistantMessage && strings.Contains(string(e.Payload), "during the suspension"))
	}
	if !found {
		t.Fatalf("the prompt's turn is not on the record: %v", kinds(b))
	}
}

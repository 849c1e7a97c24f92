package service_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// TestResumeModes: hot while running, native from a new process when the
// harness proves it, and a failed native resume recorded before the
// checkpoint fallback (checkpoint_restored) or fresh with the reason.
func TestResumeModes(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		state := t.TempDir()
		r := newRig(t, rigOptions{open: open, fake: fake.Options{StateDir: state}})
		s := r.create()
		r.prompt(s.ID, "say first answer")
		res, err := r.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
		if err != nil || res.Mode != core.ModeHot {
			t.Fatalf("resume while running: %+v %v, want hot", res, err)
		}
		r.svc.Close(ctx)

		// A new process: the fake proves its own stored session.
		r2 := newRig(t, rigOptions{db: r.db, fake: fake.Options{StateDir: state}})
		res, err = r2.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
		if err != nil || res.Mode != core.ModeNative {
			t.Fatalf("resume in a new process: %+v %v, want native", res, err)
		}
		if len(r2.rec.Restores) != 1 || r2.rec.Restores[0].Mode != core.ModeNative {
			t.Fatalf("session/restored %+v", r2.rec.Restores)
		}
		r2.prompt(s.ID, "say still here\nnext json {\"summary\": \"the user asked twice; both answered\", \"openWork\": [\"wait\"]}")
		if _, err := r2.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID, Reason: "before_suspend"}); err != nil {
			t.Fatal(err)
		}
		r2.svc.Close(ctx)

		// The harness's stored session disappears: the failure is recorded
		// first, then the checkpoint is restored into a fresh process.
		files, _ := filepath.Glob(filepath.Join(state, "*"))
		for _, f := range files {
			os.Remove(f)
		}
		var firstPrompt string
		r3 := newRig(t, rigOptions{db: r.db, fake: fake.Options{StateDir: state, Script: func(p string) []fake.Step {
			if firstPrompt == "" {
				firstPrompt = p
			}
			return nil
		}}})
		res, err = r3.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
		if err != nil || res.Mode != core.ModeCheckpointRestored || res.CheckpointEntryID == "" {
			t.Fatalf("resume after the harness lost the session: %+v %v, want checkpoint_restored", res, err)
		}
		if !strings.Contains(res.NativeError, "no conversation found") {
			t.Fatalf("nativeError %q should be the harness's own text", res.NativeError)
		}
		b := r3.branch(s.ID)
		failAt, restoredAt := -1, -1
		for i, e := range b {
			switch e.Kind {
			case core.KindSessionResumeFail:
				failAt = i
			case core.KindSessionRestored:
				if payload(t, e)["mode"] == string(core.ModeCheckpointRestored) {
					restoredAt = i
				}
			}
		}
		if failAt < 0 || restoredAt < 0 || failAt > restoredAt {
			t.Fatalf("resume_failed at %d, restored at %d: the failure must be recorded first (%v)", failAt, restoredAt, kinds(b))
		}
		if !strings.Contains(firstPrompt, "the user asked twice; both answered") || !strings.Contains(firstPrompt, "wait") {
			t.Fatalf("the fresh process's first prompt must carry the checkpoint:\n%s", firstPrompt)
		}
		sess, _ := r3.db.GetSession(ctx, s.ID)
		if sess.RestoreMode != string(core.ModeCheckpointRestored) {
			t.Fatalf("head restore mode %q", sess.RestoreMode)
		}
	})
}

func TestResumeFreshWithoutCheckpoint(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		r := newRig(t, rigOptions{open: open, fake: fake.Options{Missing: []string{core.CapNativeResume}}})
		s := r.create()
		r.prompt(s.ID, "say hi")
		r.svc.Close(ctx)
		r2 := newRig(t, rigOptions{db: r.db, fake: fake.Options{Missing: []string{core.CapNativeResume}}})
		res, err := r2.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
		if err != nil || res.Mode != core.ModeFresh || !strings.Contains(res.Reason, "no native resume") || !strings.Contains(res.Reason, "no valid checkpoint") {
			t.Fatalf("%+v %v: want fresh saying why", res, err)
		}
		for _, e := range r2.branch(s.ID) {
			if e.Kind == core.KindSessionResumeFail {
				t.Fatal("no native resume was attempted, so none failed")
			}
		}
		res, err = r2.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID, Mode: schema.ResumeFresh})
		if err != nil || res.Mode != core.ModeFresh || !strings.Contains(res.Reason, "requested") {
			t.Fatalf("deliberate fresh: %+v %v", res, err)
		}
	})
}

// TestCrashedHarness: a harness that dies mid-turn leaves session.status
// stopped with the exit code and stderr tail; entries already received are
// kept; the session can be resumed.
func TestCrashedHarness(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		r := newRig(t, rigOptions{open: open, fake: fake.Options{StateDir: t.TempDir()}})
		s := r.create()
		_, err := r.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.ID, Content: []schema.Content{{Type: "text", Text: "say before the crash\ncrash 3"}}})
		if err == nil {
			t.Fatal("a prompt whose harness crashed must fail")
		}
		r.rec.Await(t, "session.status stopped", func() bool {
			for _, e := range r.rec.Entries {
				if e.Kind == core.KindSessionStatus {
					return true
				}
			}
			return false
		})
		b := r.branch(s.ID)
		st := payload(t, b[len(b)-1])
		if b[len(b)-1].Kind != core.KindSessionStatus || st["status"] != "stopped" || st["exitCode"] != float64(3) || st["stderrTail"] == "" {
			t.Fatalf("last entry %s %v", b[len(b)-1].Kind, st)
		}
		if !strings.Contains(string(b[1].Payload), "before the crash") {
			t.Fatalf("the entry received before the crash was lost: %v", kinds(b))
		}
		res, err := r.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
		if err != nil || res.Mode == core.ModeHot {
			t.Fatalf("resume after a crash: %+v %v", res, err)
		}
		r.prompt(s.ID, "say back again")
	})
}

func TestCompactForwardedOrFallback(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		t.Run("harness command without focus", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open})
			s := r.create()
			r.prompt(s.ID, "say some work")
			out, err := r.svc.SessionCompact(ctx, schema.SessionCompactParams{SessionID: s.ID, Focus: "the parser"})
			if err != nil || out.By != "harness" || out.FocusApplied || out.FocusNote == "" || out.EntryID == "" {
				t.Fatalf("%+v %v: want by harness, focus not applied with a note, the entry id", out, err)
			}
			if len(r.rec.Compacts) != 1 || r.rec.Compacts[0].Trigger != "manual" {
				t.Fatalf("contextCompacted %+v", r.rec.Compacts)
			}
		})
		t.Run("harness command with focus", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open, fake: fake.Options{CompactFocus: true}})
			s := r.create()
			r.prompt(s.ID, "say some work")
			out, err := r.svc.SessionCompact(ctx, schema.SessionCompactParams{SessionID: s.ID, Focus: "the parser"})
			if err != nil || !out.FocusApplied {
				t.Fatalf("%+v %v", out, err)
			}
		})
		t.Run("no command: bridge checkpoint", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open, fake: fake.Options{Missing: []string{core.CapCompactCommand}}})
			s := r.create()
			r.prompt(s.ID, "say some work\nnext json {\"summary\": \"focused summary\"}")
			out, err := r.svc.SessionCompact(ctx, schema.SessionCompactParams{SessionID: s.ID, Focus: "the parser"})
			if err != nil || out.By != "bridge" || out.EntryID == "" {
				t.Fatalf("%+v %v", out, err)
			}
			if len(r.rec.Compacts) != 0 || len(r.rec.Saved) != 1 || r.rec.Saved[0].Reason != "manual" {
				t.Fatalf("compacts %+v saved %+v", r.rec.Compacts, r.rec.Saved)
			}
			for _, e := range r.branch(s.ID) {
				if e.Kind == core.KindUserMessage && strings.Contains(string(e.Payload), "Bridge checkpoint request") {
					t.Errorf("the checkpoint request went into the live thread: %s", e.Payload)
				}
			}
			asks := r.hosts[0].(*fake.Host).ForkAsks()
			if len(asks) != 1 || !strings.Contains(asks[0], "the parser") {
				t.Fatalf("asked of forks %q: the focus must reach the checkpoint request", asks)
			}
		})
	})
}

// TestNativeCompactionNeverTouchesCheckpoints: a native compaction is one
// context.compacted entry; it does not move the branch or close a request.
func TestNativeCompactionNeverTouchesCheckpoints(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	r.prompt(s.ID, "say work\ncompact auto 150000 20000")
	b := r.branch(s.ID)
	if b[len(b)-1].Kind != core.KindContextCompacted || len(r.rec.Compacts) != 1 {
		t.Fatalf("%v", kinds(b))
	}
	c := r.rec.Compacts[0]
	if c.Trigger != "auto" || c.PreTokens == nil || *c.PreTokens != 150000 || len(r.rec.Saved) != 0 {
		t.Fatalf("contextCompacted %+v saved %+v", c, r.rec.Saved)
	}
	sess, _ := r.db.GetSession(context.Background(), s.ID)
	if sess.LatestCheckpointID != "" || sess.HeadID != b[len(b)-1].ID {
		t.Fatalf("head %+v", sess)
	}
}

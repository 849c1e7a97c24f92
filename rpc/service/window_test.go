package service_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// guardStore is the rig's database with its session reads watched:
// ActiveBranch (a whole-session read) is counted and, with refuse, fails;
// with hold, ActiveBranch and Window wait until release.
type guardStore struct {
	rigStore
	refuse  bool
	whole   atomic.Int64
	windows atomic.Int64

	mu      sync.Mutex
	held    chan struct{} // closed by release; nil: reads do not wait
	waiting chan struct{} // gets a value each time a read starts waiting
}

func (g *guardStore) ActiveBranch(ctx context.Context, id string) ([]core.Entry, error) {
	g.whole.Add(1)
	g.wait()
	if g.refuse {
		return nil, core.Errorf(core.CodeInternal, "test: a live path read the whole branch of %s", id)
	}
	return g.rigStore.ActiveBranch(ctx, id)
}

func (g *guardStore) Window(ctx context.Context, id string) (core.Window, error) {
	g.windows.Add(1)
	g.wait()
	return g.rigStore.Window(ctx, id)
}

// hold makes the next reads wait until release.
func (g *guardStore) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held, g.waiting = make(chan struct{}), make(chan struct{}, 16)
}

func (g *guardStore) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

func (g *guardStore) wait() {
	g.mu.Lock()
	held, waiting := g.held, g.waiting
	g.mu.Unlock()
	if held == nil {
		return
	}
	waiting <- struct{}{}
	<-held
}

func guarded(g *guardStore) func(rigStore) core.Store {
	return func(db rigStore) core.Store { g.rigStore = db; return g }
}

// TestLivePathsReadNoWholeSession: a checkpoint of a live session,
// session/compact (Bridge's fallback and a harness's own command), a
// context-pressure checkpoint, a recovery checkpoint of a crashed session
// and a restore from the checkpoint all succeed with a store that refuses
// to read a whole branch (and a markdown export, which is a whole-session
// operation, shows the refusal is in place). A fork at the head, which
// projects the same way, does too.
func TestLivePathsReadNoWholeSession(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		t.Run("bridge checkpoints and restore", func(t *testing.T) {
			state := t.TempDir()
			g := &guardStore{refuse: true}
			r := newRig(t, rigOptions{open: open, store: guarded(g), timeout: 5 * time.Second,
				fake: fake.Options{StateDir: state, Gauge: true, Window: 100000, Missing: []string{core.CapCompactCommand}}})
			s := r.create()
			r.prompt(s.ID, "say reading\ntool Read a.go\ndecide use sqlite\nfile notes.md\nusage 20000")
			r.prompt(s.ID, "say parsed\nnext json {\"summary\": \"MANUAL parsed the input\"}")
			if _, err := checkpointOf(r, s.ID, "manual"); err != nil {
				t.Fatalf("checkpoint: %v", err)
			}
			r.prompt(s.ID, "say more\nnext json {\"summary\": \"COMPACT more work\"}")
			if out, err := r.svc.SessionCompact(ctx, schema.SessionCompactParams{SessionID: s.ID}); err != nil || out.By != "bridge" {
				t.Fatalf("compact: %+v %v", out, err)
			}
			r.prompt(s.ID, "say filling the window\nusage 80000\nnext json {\"summary\": \"PRESSURE window full\"}")
			r.rec.Await(t, "a context_pressure checkpoint", func() bool { return len(r.savedWith("context_pressure")) == 1 })
			if _, err := r.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.ID,
				Content: []schema.Content{{Type: "text", Text: "say last words before the crash\ntoolstart Bash make\ncrash 3"}}}); err == nil {
				t.Fatal("a prompt whose harness crashed must fail")
			}
			r.rec.Await(t, "the crash recorded", func() bool {
				for _, e := range r.rec.Entries {
					if e.Kind == core.KindSessionStatus {
						return true
					}
				}
				return false
			})
			rec, err := checkpointOf(r, s.ID, "manual")
			if err != nil || rec.Provenance != "reconstructed" {
				t.Fatalf("recovery checkpoint: %+v %v", rec, err)
			}
			cp, err := r.db.GetEntry(ctx, rec.EntryID)
			if err != nil || !strings.Contains(string(cp.Payload), "last words before the crash") ||
				!strings.Contains(string(cp.Payload), "PRESSURE window full") || !strings.Contains(string(cp.Payload), "use sqlite") {
				t.Fatalf("the reconstruction must quote the last message, the earlier checkpoint and the decisions: %s %v", cp.Payload, err)
			}
			// The harness loses its own session: restore from the checkpoint.
			files, _ := filepath.Glob(filepath.Join(state, "*"))
			for _, f := range files {
				os.Remove(f)
			}
			res, err := r.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
			if err != nil || res.Mode != core.ModeCheckpointRestored || res.CheckpointEntryID != rec.EntryID {
				t.Fatalf("resume: %+v %v, want checkpoint_restored from %s", res, err, rec.EntryID)
			}
			// A fork at the head reads the same way.
			fork, err := r.svc.SessionFork(ctx, schema.SessionForkParams{SessionID: s.ID})
			if err != nil || fork.Origin.EntryID == "" {
				t.Fatalf("fork: %+v %v", fork, err)
			}
			if n := g.whole.Load(); n != 0 {
				t.Fatalf("%d whole-branch reads on the live paths", n)
			}
			if _, err := r.svc.Export(ctx, s.ID, "markdown"); err == nil || g.whole.Load() == 0 {
				t.Fatalf("the guard is not in place: export %v, %d whole reads", err, g.whole.Load())
			}
		})
		t.Run("the harness's own compaction", func(t *testing.T) {
			g := &guardStore{refuse: true}
			r := newRig(t, rigOptions{open: open, store: guarded(g)})
			s := r.create()
			r.prompt(s.ID, "say some work")
			if out, err := r.svc.SessionCompact(ctx, schema.SessionCompactParams{SessionID: s.ID}); err != nil || out.By != "harness" {
				t.Fatalf("compact: %+v %v", out, err)
			}
			if n := g.whole.Load(); n != 0 {
				t.Fatalf("%d whole-branch reads", n)
			}
		})
	})
}

// TestGaugeNeverStallsRecording: while the controller's read of the record
// is held (a slow store), the session goes on recording its events, and
// further gauge readings over the threshold read nothing (a checkpoint is
// already queued); once the read is released, the one queued checkpoint is
// written.
func TestGaugeNeverStallsRecording(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		g := &guardStore{}
		r := newRig(t, rigOptions{open: open, store: guarded(g), timeout: 5 * time.Second,
			fake: fake.Options{Gauge: true, Window: 100000, Missing: []string{core.CapCompactCommand}}})
		s := r.create()
		r.prompt(s.ID, "say warming up")
		g.hold()
		defer g.release()
		reads := g.windows.Load() + g.whole.Load()
		prompted := make(chan error, 1)
		go func() {
			_, err := r.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.ID, Content: []schema.Content{{Type: "text",
				Text: "say before\nusage 80000\nsay after one\nusage 85000\nusage 90000\nsay after two\nnext json {\"summary\": \"QUEUED once\"}"}}})
			prompted <- err
		}()
		select {
		case <-g.waiting:
		case <-time.After(30 * time.Second):
			t.Fatal("the controller never read the record for the 80% reading")
		}
		r.rec.Await(t, "the events after the reading recorded while the read is held", func() bool {
			n := 0
			for _, e := range r.rec.Entries {
				if e.Kind == core.KindAssistantMessage && payload(t, e)["text"] == "after two" {
					n++
				}
			}
			return n == 1
		})
		if got := g.windows.Load() + g.whole.Load() - reads; got != 1 {
			t.Fatalf("%d reads of the record while a controller checkpoint is queued, want the queued one's 1", got)
		}
		g.release()
		if err := <-prompted; err != nil {
			t.Fatal(err)
		}
		r.rec.Await(t, "the queued context_pressure checkpoint", func() bool { return len(r.savedWith("context_pressure")) == 1 })
		if n := g.whole.Load(); n != 0 {
			t.Fatalf("%d whole-branch reads", n)
		}
		time.Sleep(100 * time.Millisecond)
		if n := len(r.savedWith("context_pressure")); n != 1 {
			t.Fatalf("%d context_pressure checkpoints, want 1", n)
		}
	})
}

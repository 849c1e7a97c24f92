package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/schema"
)

// liveThreadHasBridgeText reports the entries of the live conversation
// (user and assistant messages) that carry the checkpoint request or reply.
func liveThreadHasBridgeText(b []core.Entry, reply string) []string {
	var out []string
	for _, e := range b {
		if e.Kind != core.KindUserMessage && e.Kind != core.KindAssistantMessage {
			continue
		}
		p := string(e.Payload)
		if (e.Kind == core.KindUserMessage && strings.Contains(p, "Bridge checkpoint request")) ||
			(e.Kind == core.KindAssistantMessage && strings.Contains(p, reply)) {
			out = append(out, p)
		}
	}
	return out
}

// TestCheckpointMethods: where the harness can fork, the checkpoint is
// asked of a fork and the live conversation gets nothing (method fork, with
// the fork's token usage); where it cannot, the checkpoint is reconstructed
// from the record unless the preset asks for the live thread (in-thread);
// a fork that fails is a failed checkpoint, never a fallback into the live
// thread.
func TestCheckpointMethods(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		const reply = `{"summary": "METHOD-TEST summary"}`
		t.Run("fork", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open})
			s := r.create()
			r.prompt(s.ID, "say work before\nnext json "+reply)
			out, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID})
			if err != nil {
				t.Fatal(err)
			}
			if out.Method != schema.MethodFork || out.Provenance != schema.ProvenanceAgent || out.ForkUsage == nil || out.ForkUsage.InputTokens == 0 {
				t.Fatalf("outcome %+v, want method fork by the agent with the fork's usage", out)
			}
			b := r.branch(s.ID)
			if got := liveThreadHasBridgeText(b, "METHOD-TEST"); len(got) != 0 {
				t.Errorf("the live conversation holds Bridge's exchange: %q", got)
			}
			cp := payload(t, b[len(b)-3])
			if cp["method"] != "fork" || cp["summary"] != "METHOD-TEST summary" || cp["forkUsage"] == nil {
				t.Errorf("checkpoint payload %v", cp)
			}
			if len(r.rec.Saved) != 1 || r.rec.Saved[0].Method != "fork" || !r.rec.Saved[0].Hot {
				t.Errorf("checkpointSaved %+v", r.rec.Saved)
			}
			// The live session goes on with the turn before it, untouched.
			r.prompt(s.ID, "say after")
			if len(r.hosts[0].(*fake.Host).ForkAsks()) != 1 {
				t.Errorf("fork asks %q", r.hosts[0].(*fake.Host).ForkAsks())
			}
		})
		t.Run("no fork: reconstructed", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open, fake: fake.Options{Missing: []string{core.CapSessionFork}}})
			s := r.create()
			r.prompt(s.ID, "say work before\nfile src/a.go\nnext json "+reply)
			out, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID})
			if err != nil {
				t.Fatal(err)
			}
			if out.Method != schema.MethodReconstructed || out.Provenance != schema.ProvenanceReconstructed || out.ForkUsage != nil {
				t.Fatalf("outcome %+v, want reconstructed", out)
			}
			if got := liveThreadHasBridgeText(r.branch(s.ID), "METHOD-TEST"); len(got) != 0 {
				t.Errorf("the live conversation holds Bridge's exchange: %q", got)
			}
			if len(r.rec.Saved) != 1 || r.rec.Saved[0].Method != "reconstructed" || !r.rec.Saved[0].Hot {
				t.Errorf("checkpointSaved %+v: a running session's checkpoint is hot", r.rec.Saved)
			}
		})
		t.Run("no fork: in-thread where the preset asks", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open, fake: fake.Options{Missing: []string{core.CapSessionFork}},
				presets: []core.Preset{{Name: "asks-in-thread", Harness: "fake", Checkpoint: core.CheckpointInThread}}})
			c, err := r.svc.SessionCreate(ctx, schema.SessionCreateParams{Harness: "fake", Cwd: t.TempDir(), Preset: "asks-in-thread"})
			if err != nil {
				t.Fatal(err)
			}
			r.prompt(c.SessionID, "say work before\nnext json "+reply)
			out, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: c.SessionID})
			if err != nil {
				t.Fatal(err)
			}
			if out.Method != schema.MethodInThread || out.Provenance != schema.ProvenanceAgent {
				t.Fatalf("outcome %+v, want in-thread by the agent", out)
			}
			if got := liveThreadHasBridgeText(r.branch(c.SessionID), "METHOD-TEST"); len(got) != 2 {
				t.Errorf("in-thread: the live conversation should hold the request and the reply, got %q", got)
			}
		})
		t.Run("failing fork: no fallback", func(t *testing.T) {
			r := newRig(t, rigOptions{open: open})
			s := r.create()
			r.prompt(s.ID, "say work before\nnext crash 3")
			_, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID})
			if err == nil {
				t.Fatal("a checkpoint whose fork crashed succeeded")
			}
			b := r.branch(s.ID)
			if got := liveThreadHasBridgeText(b, "METHOD-TEST"); len(got) != 0 {
				t.Errorf("the failed fork fell back into the live thread: %q", got)
			}
			if k := kinds(b); k[len(k)-1] != "compaction.failed" {
				t.Errorf("record ends %v, want compaction.failed", k)
			}
			// The live session is unharmed.
			r.prompt(s.ID, "say still here")
		})
	})
}

// TestForkCheckpointLiveTurnGoesOn: while a checkpoint is asked of a fork,
// the live session takes a turn; that turn is recorded before the
// checkpoint's boundary (the prompt did not wait for the checkpoint), and it
// is retained verbatim after the checkpoint and kept as conversation, not
// dropped as a checkpoint exchange.
func TestForkCheckpointLiveTurnGoesOn(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, rigOptions{timeout: time.Minute})
	s := r.create()
	r.prompt(s.ID, "say work before\nnext sleep 3000\nnext json {\"summary\": \"FORKED summary\"}")
	done := make(chan error, 1)
	go func() {
		_, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID})
		done <- err
	}()
	h := r.hosts[0].(*fake.Host)
	for len(h.ForkAsks()) == 0 {
		select {
		case err := <-done:
			t.Fatalf("the checkpoint ended before its fork was asked: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	r.prompt(s.ID, "say DURING-FORK turn")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b := r.branch(s.ID)
	during, cp := -1, -1
	for i, e := range b {
		if e.Kind == core.KindAssistantMessage && strings.Contains(string(e.Payload), "DURING-FORK") {
			during = i
		}
		if e.Kind == core.KindCheckpoint {
			cp = i
		}
	}
	if during < 0 || cp < 0 || during > cp {
		t.Fatalf("the live turn at %d, the checkpoint at %d: want the turn recorded while the fork ran (%v)", during, cp, kinds(b))
	}
	p, err := checkpoint.Project(b, checkpoint.ProjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept := false
	for _, e := range p.Retained {
		kept = kept || strings.Contains(string(e.Payload), "DURING-FORK")
	}
	if !kept || p.Checkpoint.Summary != "FORKED summary" {
		t.Errorf("projection %+v: the turn taken during the fork must be retained verbatim", p)
	}
}

package rpchost_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// hostedRig is a service over a real SQLite store whose hosts are the Node
// host (through rpchost) and any extra ones.
type hostedRig struct {
	t    *testing.T
	svc  *service.Service
	db   *storage.DB
	rec  *servicetest.Recorder
	node *nodeHost
}

func newHostedRig(t *testing.T, extra ...core.BridgeHost) *hostedRig {
	t.Helper()
	nh := startNode(t, nodeCapabilities)
	r := &hostedRig{t: t, db: storagetest.Open(t), rec: servicetest.NewRecorder(), node: nh}
	r.svc = r.service(extra...)
	return r
}

func (r *hostedRig) service(extra ...core.BridgeHost) *service.Service {
	r.t.Helper()
	svc, err := service.New(service.Options{Store: r.db, Hosts: append([]core.BridgeHost{r.node.host}, extra...),
		Notifier: r.rec, DataDir: r.t.TempDir(), CheckpointTimeout: 20 * time.Second,
		Presets: []core.Preset{{Name: "in-thread", Harness: nodeHarness, Checkpoint: core.CheckpointInThread}}})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { svc.Close(context.Background()) })
	return svc
}

func (r *hostedRig) create(preset string) core.Session {
	r.t.Helper()
	s, err := r.svc.SessionCreate(context.Background(), schema.SessionCreateParams{Harness: nodeHarness, Cwd: r.t.TempDir(),
		Title: "hosted", Preset: preset, Model: "node-large", Effort: "high"})
	if err != nil {
		r.t.Fatalf("Create: %v", err)
	}
	sess, err := r.db.GetSession(context.Background(), s.SessionID)
	if err != nil {
		r.t.Fatal(err)
	}
	return sess
}

func (r *hostedRig) prompt(id, text string) {
	r.t.Helper()
	res, err := r.svc.SessionPrompt(context.Background(), schema.SessionPromptParams{SessionID: id, Content: []schema.Content{{Type: "text", Text: text}}})
	if err != nil || res.StopReason != "end_turn" {
		r.t.Fatalf("Prompt %q: %+v %v", text, res, err)
	}
}

func (r *hostedRig) branch(id string) []core.Entry {
	r.t.Helper()
	b, err := r.db.ActiveBranch(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

func text(e core.Entry) string {
	var p struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	return p.Text
}

// TestServiceHostedSession: a session hosted by the client is created,
// prompted and paged through session/history like any other; a
// session/compact is forwarded to the client's compaction command; the
// session comes back natively in a new service.
func TestServiceHostedSession(t *testing.T) {
	ctx := context.Background()
	r := newHostedRig(t)
	s := r.create("")
	if s.Harness != nodeHarness || !strings.HasPrefix(s.NativeSessionID, "node-") {
		t.Fatalf("session %+v", s)
	}
	r.prompt(s.ID, "say hello")
	res, err := r.svc.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: s.ID})
	if err != nil {
		t.Fatal(err)
	}
	var hist []core.Entry
	for _, e := range res.Entries {
		hist = append(hist, core.Entry{ID: e.ID, Kind: core.Kind(e.Kind), Payload: e.Payload})
	}
	var user, assistant bool
	for _, e := range hist {
		user = user || (e.Kind == core.KindUserMessage && text(e) == "say hello")
		assistant = assistant || (e.Kind == core.KindAssistantMessage && text(e) == "hello")
	}
	if !user || !assistant {
		t.Fatalf("history %v: want user.message %q and assistant.message %q", kindsOf(hist), "say hello", "hello")
	}
	var announced bool
	r.rec.Await(t, "session/update of the reply", func() bool {
		for _, e := range r.rec.Entries {
			announced = announced || (e.Kind == core.KindAssistantMessage && e.SessionID == s.ID)
		}
		return true
	})
	if !announced {
		t.Error("the hosted assistant.message was not sent as session/update")
	}

	out, err := r.svc.SessionCompact(ctx, schema.SessionCompactParams{SessionID: s.ID, Focus: "keep the greeting"})
	if err != nil || out.By != "harness" || !out.FocusApplied {
		t.Fatalf("Compact: %+v %v; want forwarded to the hosting client with the focus", out, err)
	}
	r.rec.Lock()
	compacts := append([]service.ContextCompacted(nil), r.rec.Compacts...)
	r.rec.Unlock()
	if len(compacts) != 1 || compacts[0].Harness != nodeHarness || compacts[0].Trigger != core.TriggerManual {
		t.Fatalf("contextCompacted %+v", compacts)
	}

	// A new Bridge process (a new service over the same record) resumes the
	// hosted session natively.
	if err := r.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r.svc = r.service()
	restored, err := r.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID})
	if err != nil || restored.Mode != "native" {
		t.Fatalf("Resume: %+v %v; want native", restored, err)
	}
	r.prompt(s.ID, "say again")
	b := r.branch(s.ID)
	if last := b[len(b)-1]; last.Kind != core.KindAssistantMessage || text(last) != "again" {
		t.Fatalf("after native resume the branch ends with %s %q", last.Kind, text(last))
	}
}

// TestServiceHostedCheckpoint: a hosted session cannot be forked, so its
// checkpoint is reconstructed from the record, unless its preset asks for
// the live thread: then the hosted session writes its own Bridge checkpoint.
func TestServiceHostedCheckpoint(t *testing.T) {
	ctx := context.Background()
	r := newHostedRig(t)
	rs := r.create("")
	r.prompt(rs.ID, "say the parser is done")
	out, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: rs.ID})
	if err != nil || out.Method != schema.MethodReconstructed || out.Provenance != "reconstructed" {
		t.Fatalf("Checkpoint without a fork or a preset asking for the live thread: %+v %v; want reconstructed", out, err)
	}
	r.rec.Lock()
	r.rec.Saved = nil
	r.rec.Unlock()

	s := r.create("in-thread")
	r.prompt(s.ID, "say the parser is done")
	out, err = r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID})
	if err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	if out.Provenance != "agent" || out.Reason != "manual" || out.Method != schema.MethodInThread {
		t.Fatalf("outcome %+v; want provenance agent, reason manual, in-thread", out)
	}
	b := r.branch(s.ID)
	n := len(b)
	if got := strings.Join(kindsOf(b[n-3:]), ","); got != "checkpoint,compaction,branch.summary" {
		t.Fatalf("branch ends with %s", got)
	}
	var cp struct {
		Summary   string   `json:"summary"`
		Decisions []string `json:"decisions"`
	}
	if err := json.Unmarshal(b[n-3].Payload, &cp); err != nil {
		t.Fatal(err)
	}
	if cp.Summary != "The node host answered the prompts it was given." || len(cp.Decisions) != 1 {
		t.Fatalf("checkpoint %+v: want the hosted session's own summary", cp)
	}
	r.rec.Lock()
	saved := append([]service.CheckpointSaved(nil), r.rec.Saved...)
	compacts := len(r.rec.Compacts)
	r.rec.Unlock()
	if len(saved) != 1 || !saved[0].Hot || saved[0].EntryID != out.EntryID || compacts != 0 {
		t.Fatalf("checkpointSaved %+v, contextCompacted %d; want one hot checkpoint and no compaction", saved, compacts)
	}
}

// TestServiceHostedMigration: a migration preview and execute between two
// presets of the hosting client, then to another harness (the fake
// adapter): the summary worker is archived (on the client too) and the
// target gets the kickoff carrying the edited handoff.
func TestServiceHostedMigration(t *testing.T) {
	ctx := context.Background()
	var fakePrompts []string
	var fpMu sync.Mutex
	fk := fake.New(fake.Options{Script: func(p string) []fake.Step {
		fpMu.Lock()
		fakePrompts = append(fakePrompts, p)
		fpMu.Unlock()
		return nil
	}})
	r := newHostedRig(t, fk)
	src := r.create("coder")
	r.prompt(src.ID, "say I will edit host.mjs")
	r.prompt(src.ID, "say budget is 4096 tokens")
	before := r.branch(src.ID)

	p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Preset: "reviewer"}})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	if len(p.Sections) != 5 || p.Sections[0].Title != "Goal" || !strings.Contains(p.Summary, "4096") {
		t.Fatalf("preview %+v", p)
	}
	all, _, err := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
	if err != nil || len(all) != 2 {
		t.Fatalf("sessions after preview: %d (%v); want the source and one worker", len(all), err)
	}
	var worker core.Session
	for _, s := range all {
		if s.ID != src.ID {
			worker = s
		}
	}
	if !worker.Archived || worker.Harness != nodeHarness {
		t.Fatalf("worker %+v: want an archived session on the hosting client", worker)
	}
	listed, err := r.node.host.ListSessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, hs := range listed {
		if hs.NativeID == worker.NativeSessionID {
			t.Fatalf("the worker %s is still listed by the hosting client: archive did not reach it", hs.NativeID)
		}
	}

	edited := strings.Replace(mustRead(t, p.Path), "4096", "8192", 1)
	if err := os.WriteFile(p.Path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p.PreviewID})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if !out.KickoffSent || !out.GoalCreated || !out.GoalPaused || out.TargetSessionID == "" {
		t.Fatalf("outcome %+v", out)
	}
	tgt, err := r.db.GetSession(ctx, out.TargetSessionID)
	if err != nil || tgt.Preset != "reviewer" || tgt.Harness != nodeHarness {
		t.Fatalf("target %+v %v", tgt, err)
	}
	// The hosting client received the kickoff: it is in its own history.
	hist, err := r.node.host.History(ctx, tgt.NativeSessionID)
	if err != nil {
		t.Fatal(err)
	}
	kicked := false
	for _, e := range hist {
		if e.Kind == core.KindUserMessage && strings.Contains(string(e.Payload), "8192") && !strings.Contains(string(e.Payload), "4096") {
			kicked = true
		}
	}
	if !kicked {
		t.Fatalf("the target's host history holds no kickoff with the edited handoff (%d entries)", len(hist))
	}
	if after := r.branch(src.ID); len(after) != len(before) {
		t.Fatal("the migration changed the source's record")
	}

	// The same task moves to another harness.
	p2, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Harness: "fake"}})
	if err != nil {
		t.Fatalf("preview to fake: %v", err)
	}
	out2, err := r.svc.MigrationExecute(ctx, schema.MigrationExecuteParams{PreviewID: p2.PreviewID})
	if err != nil || !out2.KickoffSent {
		t.Fatalf("execute to fake: %+v %v", out2, err)
	}
	tgt2, _ := r.db.GetSession(ctx, out2.TargetSessionID)
	fpMu.Lock()
	defer fpMu.Unlock()
	if tgt2.Harness != "fake" || len(fakePrompts) != 1 || !strings.Contains(fakePrompts[0], "4096") {
		t.Fatalf("fake target %+v got prompts %q; want one kickoff carrying the handoff", tgt2, fakePrompts)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func kindsOf(es []core.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Kind))
	}
	return out
}

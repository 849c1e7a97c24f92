package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"github.com/bridge-dev/bridge/rpc/service/queue"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// The flows' unit tests drive Sessions through its own small interfaces:
// a real SQLite record, real live sessions and prompt queues, the fake
// harness, and fakes for the parts around (leases, workspace, images,
// checkpoints, the controller, the client) that record what they are told.

// hostTable serves one host, answering Require from its probe.
type hostTable struct{ host core.BridgeHost }

func (h hostTable) Get(harness string) (core.BridgeHost, error) {
	if harness != h.host.Harness() {
		return nil, core.NotFound("harness", harness)
	}
	return h.host, nil
}

func (h hostTable) Lookup(harness string) (core.BridgeHost, bool) {
	return h.host, harness == h.host.Harness()
}

func (h hostTable) Capabilities(ctx context.Context, host core.BridgeHost) core.Probe {
	return host.Probe(ctx)
}

func (h hostTable) Require(ctx context.Context, host core.BridgeHost, op string, caps ...string) error {
	p := host.Probe(ctx)
	for _, c := range caps {
		if !p.Has(c) {
			e := core.Errorf(core.CodeUnavailable, "%s: %s is not available", op, c)
			e.Missing = []string{c}
			return e
		}
	}
	return nil
}

// leases hands out every lease but those of refuse's sessions.
type leases struct {
	mu      sync.Mutex
	held    map[string]bool
	refused map[string]bool
}

func (x *leases) Claim(ctx context.Context, sessionID string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.refused[sessionID] {
		return core.Errorf(core.CodeLiveElsewhere, "session %s is driven by another process", sessionID)
	}
	x.held[sessionID] = true
	return nil
}

func (x *leases) Release(sessionID string) { x.mu.Lock(); delete(x.held, sessionID); x.mu.Unlock() }

func (x *leases) holds(sessionID string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.held[sessionID]
}

// workspace is no repository; it records what it was asked.
type workspace struct {
	mu       sync.Mutex
	dropped  int
	archived []string
	gone     error
}

func (w *workspace) Start(ctx context.Context, sessionID, cwd string, worktree bool) (core.SessionRepo, string, error) {
	return core.SessionRepo{SessionID: sessionID}, cwd, nil
}
func (w *workspace) Save(ctx context.Context, r core.SessionRepo) error { return nil }
func (w *workspace) Drop(ctx context.Context, r core.SessionRepo) {
	w.mu.Lock()
	w.dropped++
	w.mu.Unlock()
}
func (w *workspace) Archive(ctx context.Context, sessionID string) error {
	w.mu.Lock()
	w.archived = append(w.archived, sessionID)
	w.mu.Unlock()
	return nil
}
func (w *workspace) Gone(ctx context.Context, sessionID string) error { return w.gone }

// images keeps an image by its hash, in memory.
type images struct{}

func (images) Keep(ctx context.Context, c core.Content) (core.Attachment, error) {
	sum := sha256.Sum256([]byte(c.Data))
	return core.Attachment{SHA256: hex.EncodeToString(sum[:]), MediaType: c.MediaType, Bytes: len(c.Data)}, nil
}

// checkpoints has the projection proj (none: not_found).
type checkpoints struct{ proj *checkpoint.Projection }

func (c checkpoints) Checkpoint(ctx context.Context, sessionID string, r checkpointer.Request) (checkpointer.Outcome, error) {
	return checkpointer.Outcome{}, core.Errorf(core.CodeUnsupported, "the flows' tests write no checkpoints")
}

func (c checkpoints) Projection(ctx context.Context, sess core.Session, opt checkpoint.ProjectOptions) (checkpoint.Projection, error) {
	if c.proj == nil {
		return checkpoint.Projection{}, core.NotFound("checkpoint", sess.ID)
	}
	return *c.proj, nil
}

// controller records what the flows told it.
type controller struct {
	mu          sync.Mutex
	afterTurns  []int // the steps completed of each turn's end
	idleClocks  int
	versions    int
	nativeAsked int
}

func (c *controller) AfterTurn(l *live.Session, steps int) {
	c.mu.Lock()
	c.afterTurns = append(c.afterTurns, steps)
	c.mu.Unlock()
}
func (c *controller) StartIdleClock(l *live.Session) { c.mu.Lock(); c.idleClocks++; c.mu.Unlock() }
func (c *controller) RecordHarnessVersion(ctx context.Context, h core.BridgeHost, id string) {
	c.mu.Lock()
	c.versions++
	c.mu.Unlock()
}
func (c *controller) BeforeNativeResume(ctx context.Context, h core.BridgeHost, sess core.Session) (core.Session, error) {
	c.mu.Lock()
	c.nativeAsked++
	c.mu.Unlock()
	return sess, nil
}

// client records what the client was told.
type client struct {
	mu       sync.Mutex
	restores []peer.Restored
}

func (c *client) Log(level int, msg string) {}
func (c *client) Restored(r peer.Restored) {
	c.mu.Lock()
	c.restores = append(c.restores, r)
	c.mu.Unlock()
}

// livesEnv is the live sessions' side of the client.
type livesEnv struct{}

func (livesEnv) EntryAppended(core.Entry)               {}
func (livesEnv) ContextCompacted(peer.ContextCompacted) {}
func (livesEnv) CheckpointSaved(peer.CheckpointSaved)   {}
func (livesEnv) Restored(peer.Restored)                 {}
func (livesEnv) Log(int, string)                        {}

// signalQueues is the real prompt queues, telling the test of each prompt
// queued (by its id).
type signalQueues struct {
	*queue.Queues
	added chan string
}

func (q signalQueues) Add(sessionID, id string, content []core.Content, at time.Time) (*queue.Prompt, error) {
	p, err := q.Queues.Add(sessionID, id, content, at)
	q.added <- id
	return p, err
}

type rig struct {
	t      *testing.T
	ctx    context.Context
	db     *storage.DB
	host   core.BridgeHost
	lives  *live.Table
	leases *leases
	ws     *workspace
	ctl    *controller
	client *client
	queued chan string
	s      *Sessions
}

// rigOptions: fake configures the fake harness; wrap replaces it (a host
// that fails); proj is the checkpoint a restoration injects.
type rigOptions struct {
	fake fake.Options
	wrap func(*fake.Host) core.BridgeHost
	proj *checkpoint.Projection
}

func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	var host core.BridgeHost = fake.New(o.fake)
	if o.wrap != nil {
		host = o.wrap(host.(*fake.Host))
	}
	r := &rig{t: t, ctx: t.Context(), db: storagetest.Open(t), host: host,
		leases: &leases{held: map[string]bool{}, refused: map[string]bool{}}, ws: &workspace{},
		ctl: &controller{}, client: &client{}, queued: make(chan string, 16)}
	r.lives = live.NewTable(live.Env{Store: r.db, Notifier: livesEnv{}, Announce: func(...core.Entry) {},
		Gauge: func(*live.Session, core.Gauge) {}, Recorded: func(*live.Session) {},
		Stopped: func(l *live.Session) { r.leases.Release(l.ID) }})
	r.s = New(Options{Store: r.db, Hosts: hostTable{host}, Lives: r.lives, Leases: r.leases, Workspace: r.ws,
		Images: images{}, Queues: signalQueues{queue.New(func(string, []schema.QueuedPrompt) {}), r.queued},
		Checkpoints: checkpoints{o.proj}, Controller: r.ctl, Notifier: r.client, Announce: func(...core.Entry) {},
		IDs: core.NewIDs(time.Now, nil), Now: time.Now})
	t.Cleanup(func() {
		for _, l := range r.lives.All() {
			_ = l.Close(context.Background())
		}
	})
	return r
}

// create makes a session through the flow.
func (r *rig) create() core.Session {
	r.t.Helper()
	s, err := r.s.Create(r.ctx, schema.SessionCreateParams{Harness: fake.Harness, Cwd: r.t.TempDir()})
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// text is a prompt of one text block.
func text(s string) []core.Content { return []core.Content{{Type: "text", Text: s}} }

// record is the session's active branch.
func (r *rig) record(sessionID string) []core.Entry {
	r.t.Helper()
	es, err := r.db.ActiveBranch(r.ctx, sessionID)
	if err != nil {
		r.t.Fatal(err)
	}
	return es
}

// said lists the user and assistant texts of es, as "user: …" and
// "assistant: …" ("user (steered): …" for a steered prompt).
func said(t *testing.T, es []core.Entry) []string {
	t.Helper()
	var out []string
	for _, e := range es {
		switch e.Kind {
		case core.KindUserMessage:
			var p core.UserMessagePayload
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Fatal(err)
			}
			who := "user"
			if p.Steered {
				who = "user (steered)"
			}
			out = append(out, who+": "+p.Text)
		case core.KindAssistantMessage:
			var p core.AssistantMessagePayload
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Fatal(err)
			}
			out = append(out, "assistant: "+p.Text)
		}
	}
	return out
}

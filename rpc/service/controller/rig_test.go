package controller

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// The controller's unit tests drive a Controller through its own small
// interfaces: a real SQLite record, real live sessions of the fake
// harness, and a fake checkpointer that records what it is asked (the
// checkpointer's own decisions are rpc/service/checkpointer's to test).

// ask is one Checkpoint call the controller made.
type ask struct {
	sessionID string
	req       checkpointer.Request
}

// fakeCheckpointer records every Checkpoint call; answer, when set, says
// what the call returns (by default a written checkpoint).
type fakeCheckpointer struct {
	mu         sync.Mutex
	asked      []ask
	calls      chan ask
	answer     func(ctx context.Context, a ask) (checkpointer.Outcome, error)
	state      checkpoint.State
	pendingErr error
}

func (f *fakeCheckpointer) Checkpoint(ctx context.Context, sessionID string, r checkpointer.Request) (checkpointer.Outcome, error) {
	a := ask{sessionID, r}
	f.mu.Lock()
	f.asked = append(f.asked, a)
	answer := f.answer
	f.mu.Unlock()
	f.calls <- a
	if answer != nil {
		return answer(ctx, a)
	}
	return checkpointer.Outcome{EntryID: "e_checkpoint", Provenance: checkpoint.ProvenanceAgent}, nil
}

func (f *fakeCheckpointer) State(ctx context.Context, sess core.Session, l checkpointer.Live, fresh bool) checkpoint.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

func (f *fakeCheckpointer) CheckNotPending(ctx context.Context, sessionID string) error {
	return f.pendingErr
}

// asks returns the calls so far.
func (f *fakeCheckpointer) asks() []ask {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ask(nil), f.asked...)
}

// fakeHosts serves the one fake host; version, when set, is the version
// its probe reports, and cached is the last probe the controller may read
// without asking.
type fakeHosts struct {
	host    core.BridgeHost
	mu      sync.Mutex
	version string
	cached  *core.Probe
}

func (h *fakeHosts) Get(harness string) (core.BridgeHost, error) {
	if harness != h.host.Harness() {
		return nil, core.NotFound("harness", harness)
	}
	return h.host, nil
}

func (h *fakeHosts) Capabilities(ctx context.Context, host core.BridgeHost) core.Probe {
	p := host.Probe(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.version != "" {
		p.Version = h.version
	}
	return p
}

func (h *fakeHosts) Cached(host core.BridgeHost) (core.Probe, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cached == nil {
		return core.Probe{}, false
	}
	return *h.cached, true
}

func (h *fakeHosts) setVersion(v string) { h.mu.Lock(); h.version = v; h.mu.Unlock() }

// tableSessions lends the controller the table's running sessions.
type tableSessions struct{ lives *live.Table }

func (s tableSessions) EnsureLive(ctx context.Context, sess core.Session) (*live.Session, error) {
	if l := s.lives.Get(sess.ID); l != nil {
		return l, nil
	}
	return nil, core.Errorf(core.CodeUnavailable, "session %s has no running harness", sess.ID)
}

func (s tableSessions) Ask(ctx context.Context, l *live.Session, prompt string) (string, error) {
	return "", errors.New("the controller's tests ask nothing of a session")
}

// logLines keeps the log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (g *logLines) Log(level int, msg string) {
	g.mu.Lock()
	g.lines = append(g.lines, msg)
	g.mu.Unlock()
}

func (g *logLines) has(sub string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range g.lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// quiet is the live sessions' notifier; these tests read the record.
type quiet struct{}

func (quiet) EntryAppended(core.Entry)               {}
func (quiet) ContextCompacted(peer.ContextCompacted) {}
func (quiet) CheckpointSaved(peer.CheckpointSaved)   {}
func (quiet) Restored(peer.Restored)                 {}
func (quiet) Log(int, string)                        {}

type rig struct {
	t     *testing.T
	ctx   context.Context
	db    *storage.DB
	host  *fake.Host
	hosts *fakeHosts
	lives *live.Table
	cp    *fakeCheckpointer
	log   *logLines
	ctl   *Controller
	wg    sync.WaitGroup
	goes  atomic.Int32 // background jobs started
}

// newRig is a controller over a fresh record and a fake host made with fo;
// opts, when set, changes the controller's options. The idle clock is off
// (tests call idle themselves).
func newRig(t *testing.T, fo fake.Options, opts func(*Options)) *rig {
	t.Helper()
	r := &rig{t: t, ctx: t.Context(), db: storagetest.Open(t), host: fake.New(fo), log: &logLines{},
		cp: &fakeCheckpointer{calls: make(chan ask, 16)}}
	r.hosts = &fakeHosts{host: r.host}
	r.lives = live.NewTable(live.Env{Store: r.db, Notifier: quiet{}, Announce: func(...core.Entry) {},
		Gauge: func(*live.Session, core.Gauge) {}, Recorded: func(*live.Session) {}, Stopped: func(*live.Session) {}})
	o := Options{Store: r.db, Hosts: r.hosts, Lives: r.lives, Sessions: tableSessions{r.lives}, Checkpointer: r.cp,
		Append: r.db.Append, Log: r.log, Life: r.ctx, CheckpointTimeout: time.Minute, SuspendAfter: -1,
		Go: func(f func()) {
			r.goes.Add(1)
			r.wg.Add(1)
			go func() { defer r.wg.Done(); f() }()
		}}
	if opts != nil {
		opts(&o)
	}
	r.ctl = New(o)
	t.Cleanup(r.wg.Wait)
	return r
}

// session records a new session of the fake harness.
func (r *rig) session() core.Session {
	r.t.Helper()
	s, err := r.db.CreateSession(r.ctx, core.Session{Harness: fake.Harness, Cwd: r.t.TempDir()})
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// start runs the fake harness for a new recorded session.
func (r *rig) start() *live.Session {
	r.t.Helper()
	sess := r.session()
	l := r.lives.New(sess.ID, r.host, core.Preset{}, true)
	h, err := r.host.CreateSession(r.ctx, core.CreateRequest{Cwd: sess.Cwd, Approve: l.Approve}, l.Sink)
	if err != nil {
		r.t.Fatal(err)
	}
	l.Harness = h
	r.lives.Put(l)
	go l.Watch()
	r.t.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}

// awaitAsk waits for the controller's next Checkpoint call.
func (r *rig) awaitAsk() ask {
	r.t.Helper()
	select {
	case a := <-r.cp.calls:
		return a
	case <-r.ctx.Done():
		r.t.Fatal("the controller asked for no checkpoint")
	}
	return ask{}
}

// statuses are the session.status payloads of a session, oldest first.
func (r *rig) statuses(sessionID string) []core.StatusPayload {
	r.t.Helper()
	es, err := r.db.ActiveBranch(r.ctx, sessionID)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []core.StatusPayload
	for _, e := range es {
		if e.Kind == core.KindSessionStatus {
			var p core.StatusPayload
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				r.t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}

// refusal is a checkpoint the decision suppressed by rule.
func refusal(rule checkpoint.Suppression) error {
	return checkpoint.Decision{Suppressed: rule, Detail: "suppressed by the test"}.Refusal(core.CodeInvalid)
}

package dsh_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// pathTap records the RPC routes a Host calls.
type pathTap struct {
	mu    sync.Mutex
	paths []string
}

func (p *pathTap) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.paths = append(p.paths, strings.TrimPrefix(req.URL.Path, "/api/"))
	p.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// take returns the routes called since the last take.
func (p *pathTap) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.paths
	p.paths = nil
	return out
}

// homeFiles lists the files under dir other than the session logs with
// their sizes and modification times (what a fork on the user's server
// would change: its workspace registry, a child session's folder).
func homeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		if d.Name() == "session.jsonl.zstd" || strings.HasPrefix(d.Name(), ".") && strings.HasSuffix(d.Name(), ".tmp") {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		out[rel] = fmt.Sprint(fi.ModTime(), " ", fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// forkEnv is a real DSH server, an adapter whose calls to it tap records
// with a fork server configured, and one session on it.
type forkEnv struct {
	model *fakemodel.Server
	r     *dshtest.Real
	h     *dsh.Host
	l     core.Live
	tap   *pathTap
	ctx   context.Context
	state string // the fork server's StateDir
}

// newForkEnv starts the fake model (answering reply, "Noted." when
// empty), the real DSH server (prepare, when set, runs on it first) and
// an adapter with a fork server (fs, when set, changes its
// configuration), and creates a session in a new folder.
func newForkEnv(t *testing.T, reply string, prepare func(*dshtest.Real), fs func(*dsh.ForkServer)) *forkEnv {
	t.Helper()
	model, r := startReal(t)
	if reply == "" {
		reply = "Noted."
	}
	model.Responder(func(fakemodel.Request) (fakemodel.Reply, bool) { return fakemodel.Reply{Text: reply}, true })
	if prepare != nil {
		prepare(r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	command, args, env := r.ForkProgram()
	e := &forkEnv{model: model, r: r, tap: &pathTap{}, ctx: ctx, state: t.TempDir()}
	cfg := dsh.ForkServer{Command: command, Args: args, Env: env, Home: r.Home, StateDir: e.state}
	if fs != nil {
		fs(&cfg)
	}
	e.h = dsh.New(dsh.Config{BaseURL: r.URL, PollInterval: 20 * time.Millisecond, HTTPClient: &http.Client{Transport: e.tap}, ForkServer: cfg})
	t.Cleanup(func() { e.h.Close(context.Background()) })
	l, err := e.h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	e.l = l
	return e
}

// turn runs one live turn.
func (e *forkEnv) turn(t *testing.T, content ...core.Content) {
	t.Helper()
	if res, err := e.l.Prompt(e.ctx, content); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt: %+v %v\n%s", res, err, e.r.Logs())
	}
}

// say runs one live turn of text.
func (e *forkEnv) say(t *testing.T, text string) {
	t.Helper()
	e.turn(t, core.Content{Type: "text", Text: text})
}

// fork makes a fork, asks it and closes it; it returns the fork's reply
// and the body of its model request.
func (e *forkEnv) fork(t *testing.T, ask string) (string, string) {
	t.Helper()
	n := len(e.model.Requests())
	f, err := e.l.(core.Forker).Fork(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Ask(e.ctx, ask)
	if err != nil {
		t.Fatalf("the fork's turn: %v", err)
	}
	if err := f.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
	for _, rq := range e.model.Requests()[n:] {
		if strings.Contains(rq.LastUserText, ask) {
			return res.Text, string(rq.Body)
		}
	}
	t.Fatalf("no model request of the fork's turn %q", ask)
	return "", ""
}

// await waits for the fork server and forgets the calls made so far.
func (e *forkEnv) await(t *testing.T) {
	t.Helper()
	if err := dsh.AwaitForkServer(e.ctx, e.h); err != nil {
		t.Fatal(err)
	}
	e.tap.take()
}

// forksStayedOff fails when a fork was asked of the user's server since
// the last take.
func (e *forkEnv) forksStayedOff(t *testing.T) {
	t.Helper()
	if calls := e.tap.take(); strings.Contains(strings.Join(calls, " "), "session.fork") {
		t.Errorf("a fork went to the user's server: %v", calls)
	}
}

// TestRealForkServer: with a fork server configured, a checkpoint fork of
// a real DSH session is made on a second `dsh web` Bridge started with a
// DSH_HOME of its own, from a copy of the session's log: the user's server
// is asked nothing but the live session's own turns (no session.fork, no
// archive, no history of a child), nothing in the user's DSH_HOME changes
// but the live session's log, the fork still answers from the whole
// conversation, a later fork holds the newer live turns and none of the
// earlier fork's, the fork server runs in the idle scheduling class, doctor
// says where forks are made, and closing the Host stops the fork server and
// removes its folder.
func TestRealForkServer(t *testing.T) {
	const reply = `{"goal":"g","state":"s","decisions":[],"next":[],"evidence":[]}`
	e := newForkEnv(t, reply, nil, nil)
	ctx, h, r := e.ctx, e.h, e.r
	e.say(t, "FS-TURN-0001: read the parser.")
	e.say(t, "FS-TURN-0002: fix the tokenizer.")
	e.await(t)
	pid := dsh.ForkServerPID(h)
	forkHome := dsh.ForkServerHome(h)
	if pid == 0 || !strings.HasPrefix(forkHome, e.state+string(os.PathSeparator)) {
		t.Fatalf("fork server pid %d, home %q (want one under %s)", pid, forkHome, e.state)
	}
	if runtime.GOOS == "linux" {
		adaptertest.GroupIsIdleClass(t, "fork server", pid)
	}
	sessionsBefore, err := h.ListSessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	before := homeFiles(t, r.Home)
	e.tap.take()
	checkpoint := func(marker string) string {
		t.Helper()
		text, body := e.fork(t, "Bridge checkpoint request "+marker+": answer with one JSON object.")
		if strings.TrimSpace(text) != reply {
			t.Fatalf("fork reply %q", text)
		}
		return body
	}
	first := checkpoint("FS-CP-ONE")
	for _, want := range []string{"FS-TURN-0001", "FS-TURN-0002"} {
		if !strings.Contains(first, want) {
			t.Errorf("the fork's request lacks the live conversation's %s", want)
		}
	}
	if calls := e.tap.take(); len(calls) > 0 {
		t.Errorf("the fork called the user's DSH server: %v", calls)
	}
	if d := diffKeys(before, homeFiles(t, r.Home)); len(d) > 0 {
		t.Errorf("the fork changed the user's DSH_HOME: %v", d)
	}
	after, err := h.ListSessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(sessionsBefore) {
		t.Errorf("the user's server lists %d sessions after the fork, %d before", len(after), len(sessionsBefore))
	}
	if p := probeFork(ctx, h); !strings.Contains(p, "Bridge starts") || !strings.Contains(p, "idle scheduling class") || strings.Contains(p, "failed") {
		t.Errorf("doctor's session.fork detail: %q", p)
	}

	e.say(t, "FS-TURN-0003: run the tests.")
	last := e.model.Requests()
	if live := string(last[len(last)-1].Body); strings.Contains(live, "FS-CP-ONE") {
		t.Error("the live thread's next request holds the fork's prompt")
	}
	second := checkpoint("FS-CP-TWO")
	if !strings.Contains(second, "FS-TURN-0003") {
		t.Error("a later fork lacks the live turn made after the first fork")
	}
	if strings.Contains(second, "FS-CP-ONE") {
		t.Error("a later fork holds the earlier fork's turn")
	}

	dir := filepath.Dir(forkHome)
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the fork server's folder %s is still there after Close (%v)", dir, err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); runtime.GOOS == "linux" && err == nil {
		t.Errorf("the fork server (pid %d) still runs after Close", pid)
	}
}

// TestRealForkServerFallsBack: when the fork server cannot make a fork
// (here: the DSH_HOME it is told is not the server's, so the session's log
// is not found), the fork is made on the user's server as without a fork
// server, never in the live thread, and doctor says why.
func TestRealForkServerFallsBack(t *testing.T) {
	wrongHome := t.TempDir()
	e := newForkEnv(t, "", nil, func(fs *dsh.ForkServer) { fs.Home = wrongHome })
	e.say(t, "FB-TURN-0001")
	e.await(t)
	e.fork(t, "FB-FORK-ASK")
	if p := probeFork(e.ctx, e.h); !strings.Contains(p, "went to the DSH server itself") || !strings.Contains(p, wrongHome) {
		t.Errorf("doctor's session.fork detail after a fallback: %q", p)
	}
	e.say(t, "FB-TURN-0002")
	rs := e.model.Requests()
	if live := string(rs[len(rs)-1].Body); strings.Contains(live, "FB-FORK-ASK") {
		t.Error("the live thread's next request holds the fork's prompt")
	}
}

// probeFork is doctor's detail of session.fork for h.
func probeFork(ctx context.Context, h *dsh.Host) string {
	for _, c := range h.Probe(ctx).Capabilities {
		if c.Name == core.CapSessionFork {
			return c.Detail
		}
	}
	return ""
}

// TestRealForkServerStopsWhenIdle: a fork server that has made no fork for
// ForkServer.IdleStop is stopped and its folder removed; the next fork
// starts another, waits for it and is made there.
func TestRealForkServerStopsWhenIdle(t *testing.T) {
	e := newForkEnv(t, "", nil, func(fs *dsh.ForkServer) { fs.IdleStop = 300 * time.Millisecond })
	e.say(t, "IDLE-TURN-0001")
	e.await(t)
	home := dsh.ForkServerHome(e.h)
	e.fork(t, "IDLE-FORK-ONE")
	deadline := time.Now().Add(time.Minute)
	for dsh.ForkServerPID(e.h) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if pid := dsh.ForkServerPID(e.h); pid != 0 {
		t.Fatalf("the fork server (pid %d) still runs a minute after its idle stop of 300ms", pid)
	}
	for _, err := os.Stat(filepath.Dir(home)); err == nil && time.Now().Before(deadline); _, err = os.Stat(filepath.Dir(home)) {
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Dir(home)); !os.IsNotExist(err) {
		t.Errorf("the stopped fork server's folder is still there (%v)", err)
	}
	// The stopped server is gone: a fork that did not reach the user's
	// server was made on a new one.
	e.fork(t, "IDLE-FORK-TWO")
	e.forksStayedOff(t)
}

// TestRealForkServerReplacedAfterItsForks: DSH keeps every child session
// in memory, so a fork server that has made its share of forks is
// replaced once none is open on it; the next fork is made on the new one
// (and none on the user's server).
func TestRealForkServerReplacedAfterItsForks(t *testing.T) {
	defer dsh.SetMaxForksPerServer(2)()
	e := newForkEnv(t, "", nil, nil)
	e.say(t, "REPL-TURN-0001")
	e.await(t)
	first := dsh.ForkServerPID(e.h)
	var pids []int
	for i := 0; i < 3; i++ {
		f, err := e.l.(core.Forker).Fork(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, dsh.ForkServerPID(e.h))
		if _, err := f.Ask(e.ctx, "REPL-FORK"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if pids[0] != first || pids[1] != first || pids[2] == first || pids[2] == 0 {
		t.Errorf("fork servers of the three forks: %v (the first %d should make two, a new one the third)", pids, first)
	}
	e.forksStayedOff(t)
}

// TestRealForkServerCarriesImages: a session whose conversation holds an
// image (DSH keeps it in its home's attachment store, by its sha256) is
// forked on the fork server with the image: the fork's model request
// carries it as the live thread's does.
func TestRealForkServerCarriesImages(t *testing.T) {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	e := newForkEnv(t, "", func(r *dshtest.Real) {
		if err := r.EnableImages(); err != nil {
			t.Fatal(err)
		}
	}, nil)
	e.turn(t, core.Content{Type: "text", Text: "IMG-TURN-0001: look at this."}, core.Content{Type: "image", MediaType: "image/png", Data: png})
	rs := e.model.Requests()
	if !strings.Contains(string(rs[len(rs)-1].Body), png) {
		t.Fatalf("the live turn's request lacks the image")
	}
	e.await(t)
	if _, fork := e.fork(t, "IMG-FORK-ASK"); !strings.Contains(fork, png) {
		t.Errorf("the fork's request lacks the conversation's image (%d bytes)", len(fork))
	}
	e.forksStayedOff(t)
}

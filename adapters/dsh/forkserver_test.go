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
	model, r := startReal(t)
	const reply = `{"goal":"g","state":"s","decisions":[],"next":[],"evidence":[]}`
	model.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		if strings.Contains(req.LastUserText, "Bridge checkpoint request") {
			return fakemodel.Reply{Text: reply}, true
		}
		return fakemodel.Reply{Text: "Noted."}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	command, args, env := r.ForkProgram()
	state := t.TempDir()
	tap := &pathTap{}
	h := dsh.New(dsh.Config{BaseURL: r.URL, PollInterval: 20 * time.Millisecond, HTTPClient: &http.Client{Transport: tap},
		ForkServer: dsh.ForkServer{Command: command, Args: args, Env: env, Home: r.Home, StateDir: state}})
	defer h.Close(context.Background())
	cwd := t.TempDir()
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	turn := func(text string) {
		t.Helper()
		if res, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: text}}); err != nil || res.StopReason != "end_turn" {
			t.Fatalf("Prompt %q: %+v %v\n%s", text, res, err, r.Logs())
		}
	}
	turn("FS-TURN-0001: read the parser.")
	turn("FS-TURN-0002: fix the tokenizer.")
	if err := dsh.AwaitForkServer(ctx, h); err != nil {
		t.Fatal(err)
	}
	pid := dsh.ForkServerPID(h)
	forkHome := dsh.ForkServerHome(h)
	if pid == 0 || !strings.HasPrefix(forkHome, state+string(os.PathSeparator)) {
		t.Fatalf("fork server pid %d, home %q (want one under %s)", pid, forkHome, state)
	}
	if runtime.GOOS == "linux" {
		adaptertest.GroupIsIdleClass(t, "fork server", pid)
	}

	var sessionsBefore []core.HostSession
	if sessionsBefore, err = h.ListSessions(ctx, ""); err != nil {
		t.Fatal(err)
	}
	before := homeFiles(t, r.Home)
	tap.take()
	checkpoint := func(marker string) string {
		t.Helper()
		n := len(model.Requests())
		f, err := l.(core.Forker).Fork(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.Ask(ctx, "Bridge checkpoint request "+marker+": answer with one JSON object.")
		if err != nil || strings.TrimSpace(res.Text) != reply {
			t.Fatalf("fork Ask: %q %v", res.Text, err)
		}
		if err := f.Close(ctx); err != nil {
			t.Fatal(err)
		}
		for _, rq := range model.Requests()[n:] {
			if strings.Contains(rq.LastUserText, marker) {
				return string(rq.Body)
			}
		}
		t.Fatalf("no model request of the fork's turn %s", marker)
		return ""
	}
	first := checkpoint("FS-CP-ONE")
	for _, want := range []string{"FS-TURN-0001", "FS-TURN-0002"} {
		if !strings.Contains(first, want) {
			t.Errorf("the fork's request lacks the live conversation's %s", want)
		}
	}
	if calls := tap.take(); len(calls) > 0 {
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

	turn("FS-TURN-0003: run the tests.")
	last := model.Requests()
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
	model, r := startReal(t)
	model.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		return fakemodel.Reply{Text: "Noted."}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	command, args, env := r.ForkProgram()
	wrongHome := t.TempDir()
	h := dsh.New(dsh.Config{BaseURL: r.URL, PollInterval: 20 * time.Millisecond,
		ForkServer: dsh.ForkServer{Command: command, Args: args, Env: env, Home: wrongHome, StateDir: t.TempDir()}})
	defer h.Close(context.Background())
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "FB-TURN-0001"}}); err != nil {
		t.Fatal(err)
	}
	if err := dsh.AwaitForkServer(ctx, h); err != nil {
		t.Fatal(err)
	}
	f, err := l.(core.Forker).Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Ask(ctx, "FB-FORK-ASK"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if p := probeFork(ctx, h); !strings.Contains(p, "went to the DSH server itself") || !strings.Contains(p, wrongHome) {
		t.Errorf("doctor's session.fork detail after a fallback: %q", p)
	}
	if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "FB-TURN-0002"}}); err != nil {
		t.Fatal(err)
	}
	rs := model.Requests()
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
	model, r := startReal(t)
	model.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		return fakemodel.Reply{Text: "Noted."}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	command, args, env := r.ForkProgram()
	tap := &pathTap{}
	h := dsh.New(dsh.Config{BaseURL: r.URL, PollInterval: 20 * time.Millisecond, HTTPClient: &http.Client{Transport: tap},
		ForkServer: dsh.ForkServer{Command: command, Args: args, Env: env, Home: r.Home, StateDir: t.TempDir(), IdleStop: 300 * time.Millisecond}})
	defer h.Close(context.Background())
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "IDLE-TURN-0001"}}); err != nil {
		t.Fatal(err)
	}
	fork := func(ask string) {
		t.Helper()
		f, err := l.(core.Forker).Fork(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Ask(ctx, ask); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := dsh.AwaitForkServer(ctx, h); err != nil {
		t.Fatal(err)
	}
	home := dsh.ForkServerHome(h)
	tap.take()
	fork("IDLE-FORK-ONE")
	deadline := time.Now().Add(time.Minute)
	for dsh.ForkServerPID(h) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if pid := dsh.ForkServerPID(h); pid != 0 {
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
	fork("IDLE-FORK-TWO")
	if calls := tap.take(); strings.Contains(strings.Join(calls, " "), "session.fork") {
		t.Errorf("a fork went to the user's server: %v", calls)
	}
}

// TestRealForkServerReplacedAfterItsForks: DSH keeps every child session
// in memory, so a fork server that has made its share of forks is
// replaced once none is open on it; the next fork is made on the new one
// (and none on the user's server).
func TestRealForkServerReplacedAfterItsForks(t *testing.T) {
	defer dsh.SetMaxForksPerServer(2)()
	model, r := startReal(t)
	model.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		return fakemodel.Reply{Text: "Noted."}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	command, args, env := r.ForkProgram()
	tap := &pathTap{}
	h := dsh.New(dsh.Config{BaseURL: r.URL, PollInterval: 20 * time.Millisecond, HTTPClient: &http.Client{Transport: tap},
		ForkServer: dsh.ForkServer{Command: command, Args: args, Env: env, Home: r.Home, StateDir: t.TempDir()}})
	defer h.Close(context.Background())
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "REPL-TURN-0001"}}); err != nil {
		t.Fatal(err)
	}
	if err := dsh.AwaitForkServer(ctx, h); err != nil {
		t.Fatal(err)
	}
	first := dsh.ForkServerPID(h)
	tap.take()
	var pids []int
	for i := 0; i < 3; i++ {
		f, err := l.(core.Forker).Fork(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, dsh.ForkServerPID(h))
		if _, err := f.Ask(ctx, "REPL-FORK"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if pids[0] != first || pids[1] != first || pids[2] == first || pids[2] == 0 {
		t.Errorf("fork servers of the three forks: %v (the first %d should make two, a new one the third)", pids, first)
	}
	if calls := tap.take(); strings.Contains(strings.Join(calls, " "), "session.fork") {
		t.Errorf("a fork went to the user's server: %v", calls)
	}
}

// TestRealForkServerCarriesImages: a session whose conversation holds an
// image (DSH keeps it in its home's attachment store, by its sha256) is
// forked on the fork server with the image: the fork's model request
// carries it as the live thread's does.
func TestRealForkServerCarriesImages(t *testing.T) {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	model, r := startReal(t)
	model.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		return fakemodel.Reply{Text: "Noted."}, true
	})
	if err := r.EnableImages(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	command, args, env := r.ForkProgram()
	tap := &pathTap{}
	h := dsh.New(dsh.Config{BaseURL: r.URL, PollInterval: 20 * time.Millisecond, HTTPClient: &http.Client{Transport: tap},
		ForkServer: dsh.ForkServer{Command: command, Args: args, Env: env, Home: r.Home, StateDir: t.TempDir()}})
	defer h.Close(context.Background())
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "IMG-TURN-0001: look at this."}, {Type: "image", MediaType: "image/png", Data: png}}); err != nil {
		t.Fatal(err)
	}
	rs := model.Requests()
	if !strings.Contains(string(rs[len(rs)-1].Body), png) {
		t.Fatalf("the live turn's request lacks the image")
	}
	if err := dsh.AwaitForkServer(ctx, h); err != nil {
		t.Fatal(err)
	}
	tap.take()
	f, err := l.(core.Forker).Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := len(model.Requests())
	if _, err := f.Ask(ctx, "IMG-FORK-ASK"); err != nil {
		t.Fatalf("the fork's turn: %v", err)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var fork string
	for _, rq := range model.Requests()[n:] {
		if strings.Contains(rq.LastUserText, "IMG-FORK-ASK") {
			fork = string(rq.Body)
		}
	}
	if !strings.Contains(fork, png) {
		t.Errorf("the fork's request lacks the conversation's image (%d bytes)", len(fork))
	}
	if calls := tap.take(); strings.Contains(strings.Join(calls, " "), "session.fork") {
		t.Errorf("the fork went to the user's server: %v", calls)
	}
}

//go:build linux

package opencode

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// processesIn lists the processes whose working directory is dir or below
// it (OpenCode's servers run in the Host's home).
func processesIn(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			out = append(out, pid)
		}
	}
	return out
}

// openFiles lists the files process pid has open.
func openFiles(pid int) []string {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if p, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// liveRows counts the rows of table whose column equals value in the live
// server's database (read-only).
func liveRows(t *testing.T, h *Host, table, column, value string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+h.databasePath()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM "+table+" WHERE "+column+" = ?", value).Scan(&n); err != nil {
		t.Fatalf("read %s of the live database: %v", table, err)
	}
	return n
}

// TestForkRunsOnTheForkServer: once the fork server (a second opencode
// serve at nice 10 in the idle scheduling class, with its own database in
// memory) answers, a fork of a
// live session is copied and asked there, not on the live server: it
// holds the live conversation (replayed from the live database's events),
// the fork server never opens the live database and the fork leaves no
// row in it, its turn reaches neither the live session's sink nor the
// live thread, Close deletes it (the live server no longer finds it), a
// later fork holds the live turns made since (the replica catches up) and
// none of the earlier fork's, a replica that is not what the Host
// remembers is made again, and Host.Close stops both processes.
func TestForkRunsOnTheForkServer(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		switch {
		case strings.Contains(strings.ToLower(string(r.Body)), "title generator"):
			return fakemodel.Reply{Text: "A title"}, true
		case strings.Contains(r.LastUserText, "FORK-QUESTION"):
			return fakemodel.Reply{Text: "FORK-ANSWER: port 55837"}, true
		case strings.Contains(r.LastUserText, "LIVE-ONE"):
			return fakemodel.Reply{Text: "LIVE-ONE-ANSWER"}, true
		}
		return fakemodel.Reply{Text: "LIVE-TWO-ANSWER"}, true
	})
	home := t.TempDir()
	h := realHost(t, bin, home, model)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	rec := adaptertest.NewEvents()
	lv, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	l := lv.(*live)
	if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "LIVE-ONE: the server listens on port 55837."}}); err != nil {
		t.Fatal(err)
	}
	fsrv, err := h.awaitForkServer(ctx)
	if err != nil {
		t.Fatalf("the fork server did not start: %v", err)
	}
	livePID, forkPID := l.srv.proc.Cmd.Process.Pid, fsrv.proc.Cmd.Process.Pid
	if fsrv == l.srv || forkPID == livePID {
		t.Fatalf("the fork server is the live server (pid %d)", livePID)
	}
	adaptertest.ForkNice(t, "the live server", livePID, "the fork server", forkPID)
	// The Host's own record of a refusal: the one this fork server met.
	h.mu.Lock()
	idleErr := h.fork.idleErr
	h.mu.Unlock()
	if idleErr == nil {
		threads, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(forkPID), "task"))
		for _, th := range threads {
			st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(forkPID), "task", th.Name(), "stat"))
			if err != nil {
				continue
			}
			f := strings.Fields(string(st)[strings.LastIndexByte(string(st), ')')+2:])
			if f[38] != "5" { // field 41, the scheduling policy: 5 is SCHED_IDLE
				t.Errorf("fork server thread %s has scheduling policy %s, want SCHED_IDLE (5)", th.Name(), f[38])
			}
		}
	}

	before := len(rec.Entries())
	f, err := l.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	side := f.(*fork).side
	if side.srv != fsrv {
		t.Fatalf("the fork was made on %s, not on the fork server %s", side.srv.base, fsrv.base)
	}
	reply, err := f.Ask(ctx, "FORK-QUESTION: where does the server listen?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply.Text, "FORK-ANSWER") {
		t.Errorf("the fork answered %q", reply.Text)
	}
	var forkReq *fakemodel.Request
	for _, r := range model.Requests() {
		if strings.Contains(r.LastUserText, "FORK-QUESTION") {
			forkReq = &r
		}
	}
	if forkReq == nil || !strings.Contains(string(forkReq.Body), "LIVE-ONE-ANSWER") {
		t.Errorf("the fork's model request does not hold the live conversation")
	}
	if n := len(rec.Entries()); n != before {
		t.Errorf("the fork's turn reached the live session's sink: %d entries", n-before)
	}
	livePath := h.databasePath()
	for _, p := range openFiles(forkPID) {
		if strings.HasPrefix(p, livePath) {
			t.Errorf("the fork server has the live database open: %s", p)
		}
	}
	if n := liveRows(t, h, "session", "id", side.id); n != 0 {
		t.Errorf("the fork %s is in the live database (%d rows)", side.id, n)
	}
	if n := liveRows(t, h, "event", "aggregate_id", side.id); n != 0 {
		t.Errorf("the live database holds %d events of the fork %s", n, side.id)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var gone sessionInfo
	err = h.do(ctx, l.srv, http.MethodGet, "/session/"+side.id, nil, nil, &gone)
	var he *httpError
	if !errors.As(err, &he) || he.Status != http.StatusNotFound {
		t.Errorf("after Close, the live server's GET of the fork %s: %v (%+v), want 404", side.id, err, gone)
	}

	if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: "LIVE-TWO: carry on."}}); err != nil {
		t.Fatal(err)
	}
	rs := model.Requests()
	last := string(rs[len(rs)-1].Body)
	if !strings.Contains(last, "LIVE-ONE-ANSWER") || strings.Contains(last, "FORK-QUESTION") || strings.Contains(last, "FORK-ANSWER") {
		t.Errorf("the live thread's next request lost its turn or holds the fork's: %.300s", last)
	}

	// A later fork: the replica catches up with LIVE-TWO; then one made
	// after the Host's record of the replica went wrong.
	for i, what := range []string{"the second fork", "a fork from a replica made again"} {
		if i == 1 {
			h.replMu.Lock()
			h.replSeq[l.id] = 0
			h.replMu.Unlock()
		}
		f, err := l.Fork(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if side := f.(*fork).side; side.srv != fsrv {
			t.Errorf("%s was made on %s, not on the fork server %s", what, side.srv.base, fsrv.base)
		}
		question := "FORK-QUESTION " + strconv.Itoa(i+2) + ": where does the server listen?"
		if _, err := f.Ask(ctx, question); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var body string
		for _, r := range model.Requests() {
			if strings.Contains(r.LastUserText, question) {
				body = string(r.Body)
			}
		}
		if !strings.Contains(body, "LIVE-ONE-ANSWER") || !strings.Contains(body, "LIVE-TWO-ANSWER") || strings.Contains(body, "FORK-ANSWER") {
			t.Errorf("%s's model request lacks a live turn or holds an earlier fork's: %.300s", what, body)
		}
		if err := f.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}

	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	h.Close(cctx)
	if !l.srv.dead() || !fsrv.dead() {
		t.Errorf("after Host.Close: live server dead %v, fork server dead %v", l.srv.dead(), fsrv.dead())
	}
}

// forkServerState reports whether h's fork server runs or is starting.
func forkServerState(h *Host) (running, starting bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fork.srv != nil, h.fork.warming
}

// TestForkServerStartsAtTheFirstFork: creating sessions starts no fork
// server (a Host that never checkpoints pays for one server only); a fork
// of a session whose preset has forkServer false is copied on the live
// server and starts none; the first fork of another session is copied on
// the live server while it starts the fork server.
func TestForkServerStartsAtTheFirstFork(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	home := t.TempDir()
	h := realHost(t, bin, home, model)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	off := false
	plain, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir(),
		Preset: core.Preset{Name: "plain", Harness: harnessName, ForkServer: &off}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lv, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if running, starting := forkServerState(h); running || starting {
		t.Fatalf("creating sessions started the fork server (running %v, starting %v)", running, starting)
	}
	forkOn := func(l core.Live) *server {
		t.Helper()
		f, err := l.(*live).Fork(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close(ctx)
		return f.(*fork).side.srv
	}
	if srv := forkOn(plain); srv != plain.(*live).srv {
		t.Errorf("a fork with forkServer false was made on %s, not on the live server %s", srv.base, plain.(*live).srv.base)
	}
	if running, starting := forkServerState(h); running || starting {
		t.Fatalf("a fork with forkServer false started the fork server (running %v, starting %v)", running, starting)
	}
	if srv := forkOn(lv); srv != lv.(*live).srv {
		t.Errorf("the first fork was made on %s, not on the live server %s while the fork server starts", srv.base, lv.(*live).srv.base)
	}
	if running, starting := forkServerState(h); !running && !starting {
		t.Error("the first fork did not start the fork server")
	}
}

// TestCloseStopsAForkServerStarting: a Host closed while its fork server
// is still starting (right after the first fork started it) leaves no
// OpenCode process behind in its home.
func TestCloseStopsAForkServerStarting(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	home := t.TempDir()
	h := realHost(t, bin, home, model)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lv, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := lv.(*live).Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if running, starting := forkServerState(h); !running && !starting {
		t.Fatal("the first fork did not start the fork server")
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	h.Close(cctx)
	if pids := processesIn(home); len(pids) > 0 {
		t.Errorf("processes %v still run in the Host's home after Close", pids)
	}
}

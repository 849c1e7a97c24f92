package dsh

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core/inputfile"
)

// ForkServer configures the DSH web server Bridge starts for checkpoint
// forks. A fork made with session.fork on the user's own server runs on
// that server's one Node event loop, which also serves the live session:
// DSH builds the child from the seed (every event copied), composes its
// agent, writes the seed as the child's log and runs the fork's turn
// there, and the live turn beside it waited for all of it. The fork server
// is a second `dsh web` with a DSH_HOME of its own under Bridge's data
// directory; before each fork Bridge copies the live session's log from
// the user's DSH_HOME (read-only, whole zstd frames only) into it, and the
// fork is made and asked there, in the idle scheduling class. The user's
// server is not called and the user's DSH_HOME is not written.
type ForkServer struct {
	// Command runs DSH: the npm package's `dsh` program (which needs Node
	// 22 as `node`), or a Node 22 binary with Args naming DSH's
	// lib/bin.js. Empty: no fork server; forks are made on the user's
	// server.
	Command string
	// Args come before `web --no-open --host 127.0.0.1 --port 0`.
	Args []string
	// Env is added to Bridge's environment for the fork server (the
	// provider's key and base URL when they are not in DSH's own
	// settings). DSH_HOME is Bridge's; telemetry is off.
	Env []string
	// Home is the user's DSH_HOME (default $DSH_HOME, else ~/.dsh). It is
	// only read: the live sessions' logs, and settings.yaml and
	// .credentials.yaml, copied (owner-only) when the fork server starts,
	// so that it uses the same providers and models.
	Home string
	// StateDir is the folder under Bridge's data directory the fork
	// server's own home is made in (removed when it stops; folders of
	// Bridge processes that no longer run are removed too).
	StateDir string
	// IdleStop stops the fork server after it has made no fork for this
	// long (0: DefaultForkIdleStop; negative: kept until Bridge stops).
	IdleStop time.Duration
}

// DefaultForkIdleStop is how long an unused fork server is kept.
const DefaultForkIdleStop = 3 * time.Minute

// forkDirPrefix starts the name of a fork server's folder under
// ForkServer.StateDir; the Bridge process's id follows.
const forkDirPrefix = "fork-server-"

// forkServerStartTimeout bounds a fork server's start; forks are made on
// the user's server meanwhile.
const forkServerStartTimeout = 3 * time.Minute

// forkServerRetry is how long after a failed start the next is tried
// (each try costs a Node start).
const forkServerRetry = 5 * time.Minute

// forkServerWait bounds how long a fork waits for a fork server that is
// starting before it is made on the user's server instead.
const forkServerWait = time.Minute

// copiedSettings are the files of the user's DSH_HOME the fork server is
// given: DSH's settings (providers, models) and its credentials document.
var copiedSettings = []string{"settings.yaml", ".credentials.yaml"}

// forkProc is a running fork server.
type forkProc struct {
	p    *procutil.Process
	dir  string // its folder; DSH_HOME is dir/.dsh
	home string
	host *Host // calls it
	made int   // forks made on it, under forkServers.mu
}

// maxForksPerServer is how many forks one fork server makes before it is
// replaced (a variable for tests).
var maxForksPerServer = 64

func (fp *forkProc) dead() bool {
	select {
	case <-fp.p.Done():
		return true
	default:
		return false
	}
}

// forkServers keeps a Host's fork server: started in the background with
// the Host's first session (a Host with no DSH session starts none), again
// by the next session or fork after it stopped (or, after a failed start,
// once forkServerRetry has passed), and stopped when idle or when the Host
// closes.
type forkServers struct {
	mu       sync.Mutex
	cur      *forkProc
	warming  bool
	lastErr  error     // why the last start, or the last fork there, failed
	retryAt  time.Time // a failed start is not tried again before this
	idleErr  error     // the system's refusal of the idle class, if any
	closed   bool
	busy     int // forks open on cur
	idle     *time.Timer
	ctx      context.Context
	stop     context.CancelFunc
	starting sync.WaitGroup
	sweep    sync.Once
}

// forkServerConfigured reports whether a fork server is configured.
func (h *Host) forkServerConfigured() bool { return h.cfg.ForkServer.Command != "" }

// forkServer returns the running fork server, or nil (and then starts one
// in the background unless one is starting or the Host is closed).
func (h *Host) forkServer() *forkProc {
	if !h.forkServerConfigured() {
		return nil
	}
	s := &h.forks
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && !s.cur.dead() {
		return s.cur
	}
	if s.closed || s.warming || time.Now().Before(s.retryAt) {
		return nil
	}
	s.cur = nil
	s.warming = true
	s.starting.Add(1)
	go func() {
		defer s.starting.Done()
		fp, err := h.startForkServer(s.ctx)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.warming = false
		if err != nil {
			s.lastErr, s.retryAt = err, time.Now().Add(forkServerRetry)
			return
		}
		if s.closed {
			go fp.stop()
			return
		}
		s.cur, s.lastErr = fp, nil
		s.armIdle(h.cfg.ForkServer.IdleStop)
	}()
	return nil
}

// readyForkServer returns the fork server, waiting up to forkServerWait
// for one that is starting (the Host starts it with its first session, so
// a checkpoint soon after finds it ready or nearly); nil when none is
// configured or it could not start.
func (h *Host) readyForkServer(ctx context.Context) *forkProc {
	if !h.forkServerConfigured() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, forkServerWait)
	defer cancel()
	if h.awaitForkServer(wctx) != nil {
		return nil
	}
	return h.forkServer()
}

// awaitForkServer starts the fork server if needed and waits until it
// answers (benchmarks and tests measure forks made there).
func (h *Host) awaitForkServer(ctx context.Context) error {
	for {
		if h.forkServer() != nil {
			return nil
		}
		h.forks.mu.Lock()
		warming, err := h.forks.warming, h.forks.lastErr
		h.forks.mu.Unlock()
		if !warming && err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// begin and end bracket a fork open on the fork server: an idle fork
// server is stopped only when no fork is open on it, and one that has made
// maxForksPerServer forks is replaced once none is open on it (DSH keeps
// every child session it made in memory; it has no call that drops one).
func (s *forkServers) begin() {
	s.mu.Lock()
	s.busy++
	if s.cur != nil {
		s.cur.made++
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
}

// end reports whether the fork server was retired (the caller starts the
// next one).
func (s *forkServers) end(idle time.Duration) (retired bool) {
	s.mu.Lock()
	s.busy--
	if fp := s.cur; fp != nil && s.busy == 0 && fp.made >= maxForksPerServer {
		s.cur = nil
		s.mu.Unlock()
		go fp.stop()
		return true
	}
	s.armIdle(idle)
	s.mu.Unlock()
	return false
}

// armIdle (under mu) stops the current fork server once it has been idle
// for d.
func (s *forkServers) armIdle(d time.Duration) {
	if d < 0 || s.busy > 0 || s.cur == nil {
		return
	}
	if d == 0 {
		d = DefaultForkIdleStop
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	fp := s.cur
	s.idle = time.AfterFunc(d, func() {
		s.mu.Lock()
		if s.cur != fp || s.busy > 0 {
			s.mu.Unlock()
			return
		}
		s.cur = nil
		s.mu.Unlock()
		fp.stop()
	})
}

// failed notes why a fork on the fork server failed (doctor shows it).
func (s *forkServers) failed(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

// close stops the fork server and any start under way.
func (s *forkServers) close() {
	s.mu.Lock()
	s.closed = true
	if s.stop != nil {
		s.stop()
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	fp := s.cur
	s.cur = nil
	s.mu.Unlock()
	s.starting.Wait()
	if fp != nil {
		fp.stop()
	}
}

// Close stops the fork server, if one runs. The user's DSH server is not
// Bridge's and keeps running.
func (h *Host) Close(ctx context.Context) error {
	h.forks.close()
	return nil
}

var servedAt = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`dsh web: (http://127\.0\.0\.1:\d+)`) })

// startForkServer makes the fork server's folder (its DSH_HOME holding
// copies of the user's settings), starts `dsh web` on 127.0.0.1 and waits
// until it prints where it serves; it then runs in the idle scheduling
// class and at nice 10 (its start runs at Bridge's priority: at nice 10 a
// start on a busy machine took minutes).
func (h *Host) startForkServer(ctx context.Context) (fp *forkProc, err error) {
	c := h.cfg.ForkServer
	defer func() {
		if err != nil {
			err = fmt.Errorf("dsh: start the fork server (%s): %w", c.Command, err)
		}
	}()
	path, err := exec.LookPath(c.Command)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.StateDir, 0o700); err != nil {
		return nil, err
	}
	h.forks.sweep.Do(func() { procutil.SweepEndedDirs(c.StateDir, forkDirPrefix) })
	dir, err := os.MkdirTemp(c.StateDir, fmt.Sprintf("%s%d-", forkDirPrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	fp = &forkProc{dir: dir, home: filepath.Join(dir, ".dsh")}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	if err := copySettings(ctx, c.Home, fp.home); err != nil {
		return nil, err
	}
	env := append(os.Environ(), c.Env...)
	env = append(env, "DSH_HOME="+fp.home, "DSH_TELEMETRY_DISABLED=1")
	found := make(chan string, 1)
	out := &procutil.Tail{}
	fp.p, err = procutil.Start(procutil.Spec{Path: path, Args: append(append([]string{}, c.Args...), "web", "--no-open", "--host", "127.0.0.1", "--port", "0"),
		Dir: dir, Env: env, Stdout: func(r io.Reader) { scanAddress(r, found, out) }})
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithTimeout(ctx, forkServerStartTimeout)
	defer cancel()
	select {
	case url := <-found:
		fp.host = New(Config{BaseURL: url, Timeout: h.cfg.Timeout, PollInterval: h.cfg.PollInterval})
	case <-fp.p.Done():
		return nil, fmt.Errorf("it exited before serving (%s): %s%s", fp.p.Exit().Err, out.String(), fp.p.Exit().StderrTail)
	case <-tctx.Done():
		fp.p.Signal(true)
		<-fp.p.Done()
		return nil, fmt.Errorf("it did not print where it serves within %s: %w", forkServerStartTimeout, tctx.Err())
	}
	idleErr := procutil.IdlePriority(fp.p.Cmd)
	h.forks.mu.Lock()
	h.forks.idleErr = idleErr
	h.forks.mu.Unlock()
	return fp, nil
}

// scanAddress reads the fork server's output to its end, sends the first
// address it prints to found and keeps the tail of it in out.
func scanAddress(r io.Reader, found chan<- string, out *procutil.Tail) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		_, _ = out.Write([]byte(line + "\n"))
		if m := servedAt().FindStringSubmatch(line); m != nil && !sent {
			found <- m[1]
			sent = true
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// stop ends the fork server (SIGTERM, SIGKILL after 10 s) and removes its
// folder.
func (fp *forkProc) stop() {
	fp.p.Signal(false)
	select {
	case <-fp.p.Done():
	case <-time.After(10 * time.Second):
		fp.p.Signal(true)
		<-fp.p.Done()
	}
	_ = os.RemoveAll(fp.dir)
}

// userHome is the user's DSH_HOME: ForkServer.Home, else $DSH_HOME, else
// ~/.dsh.
func (h *Host) userHome() string {
	if d := h.cfg.ForkServer.Home; d != "" {
		return d
	}
	return defaultHome()
}

// copySettings copies the user's settings files that exist (regular, at
// most 1 MiB) into the fork server's home, owner-only.
func copySettings(ctx context.Context, from, to string) error {
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	for _, name := range copiedSettings {
		src := filepath.Join(from, name)
		if _, err := os.Lstat(src); errors.Is(err, os.ErrNotExist) || from == "" {
			continue
		}
		b, err := inputfile.ReadFile(ctx, src, "DSH "+name, 1<<20)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// forkWhere says, for doctor, where forks are made.
func (h *Host) forkWhere() string {
	if !h.forkServerConfigured() {
		return "on the DSH server itself (no fork server configured: the fork and its turn share the live session's event loop)"
	}
	s := &h.forks
	s.mu.Lock()
	defer s.mu.Unlock()
	how := "on a `dsh web` Bridge starts with a DSH_HOME of its own, from a copy of the session's log (the user's server is not called)"
	if s.idleErr != nil {
		how += ", at nice 10 (the idle scheduling class was refused: " + s.idleErr.Error() + ")"
	} else {
		how += ", in the idle scheduling class"
	}
	if s.lastErr != nil {
		how += "; the last start or fork there failed, and forks went to the DSH server itself: " + s.lastErr.Error()
	}
	return how
}

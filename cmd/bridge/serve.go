package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"

	"github.com/bridge-dev/bridge/adapters/rpchost"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc"
	"github.com/bridge-dev/bridge/rpc/service"
)

// backend is the service plus the resources it owns, as rpc sees it.
type backend struct {
	*service.Service
	e    *env
	host *rpchost.Host // sessions hosted by the client, or nil
}

// HostEvent hands a host/event notification to the client-hosted sessions.
func (b backend) HostEvent(ctx context.Context, params json.RawMessage) {
	if b.host != nil {
		b.host.HostEvent(ctx, params)
	}
}

// Close stops the harness sessions and closes the database.
func (b backend) Close(ctx context.Context) error { return b.e.Close(ctx) }

// serveHint is shown when `bridge serve` reads from a terminal: a person
// typed it, and would otherwise see nothing happen.
const serveHint = `bridge serve: waiting for JSON-RPC 2.0 messages in LSP framing (Content-Length headers) on stdin.
An editor extension or a WebUI server starts this and talks to it; a person wants another command
(bridge help). Ctrl-C stops it.
`

// serve runs the JSON-RPC sidecar on stdin/stdout until exit.
func (a *app) serve(ctx context.Context, args []string) int {
	fs, _ := a.flags("serve")
	maxLen := fs.Int64("max-content-length", 64<<20, "largest accepted message body, in bytes")
	logLevel := fs.String("log-level", "warn", "stderr log level: debug, info, warn, error")
	if _, err := a.parse(fs, args); err != nil {
		if errors.Is(err, errHelpShown) {
			return 0
		}
		return a.report("serve", err)
	}
	lvl, err := parseLogLevel(*logLevel)
	if err != nil {
		return a.report("serve", err)
	}
	if v := os.Getenv("BRIDGE_MAX_CONTENT_LENGTH"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return a.report("serve", usageError{fmt.Sprintf("BRIDGE_MAX_CONTENT_LENGTH=%q is not a positive number", v)})
		}
		*maxLen = n
	}
	if isTerminal(a.stdin) {
		// The hint tells a person that Ctrl-C stops it: true only once the
		// handlers are in place (they are installed beside the start).
		awaitSignals()
		fmt.Fprint(a.stderr, serveHint)
	}
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: lvl}))
	// When --data-dir or BRIDGE_DATA_DIR decides the data directory,
	// initialize cannot change it: open it now, while the client's
	// initialize is being read.
	pre := a.preopen(ctx)
	defer pre.release()
	cfg := rpc.Config{
		Version:          version,
		Harnesses:        harnessNames(),
		MaxContentLength: *maxLen,
		Logger:           logger,
		Open:             a.openBackend(pre, logger),
	}
	if path := os.Getenv("BRIDGE_CPUPROFILE"); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			fmt.Fprintf(a.stderr, "bridge serve: BRIDGE_CPUPROFILE: %v\n", err)
			return 2
		}
		defer stop()
	}
	var code int
	if pre.ch != nil {
		// Opening the database is the longest part of answering
		// initialize: it runs on this goroutine, which is running already,
		// and a new one reads the client's messages meanwhile (a new
		// goroutine waits for a thread to run it, at startup a fraction of
		// a millisecond).
		type served struct {
			code int
			err  error
		}
		done := make(chan served, 1)
		go func() {
			code, err := rpc.Serve(ctx, a.stdin, a.stdout, cfg)
			done <- served{code, err}
		}()
		pre.open(ctx, a)
		r := <-done
		code, err = r.code, r.err
	} else {
		code, err = rpc.Serve(ctx, a.stdin, a.stdout, cfg)
	}
	if err != nil {
		logger.Error("bridge serve", "error", err)
	}
	return code
}

// parseLogLevel reads a --log-level value (serve, web, acp).
func parseLogLevel(v string) (slog.Level, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(v)); err != nil {
		return lvl, usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", v)}
	}
	return lvl, nil
}

// startCPUProfile writes a CPU profile of the sidecar to path until stop is
// called (BRIDGE_CPUPROFILE, for performance work).
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// openBackend is serve's rpc.Config.Open: the service for the client that
// sent initialize, on the database pre opened meanwhile when it did.
func (a *app) openBackend(pre *preopened, logger *slog.Logger) func(ctx context.Context, opts rpc.InitOptions, n service.Notifier, client rpc.Caller) (rpc.Backend, error) {
	return func(ctx context.Context, opts rpc.InitOptions, n service.Notifier, client rpc.Caller) (rpc.Backend, error) {
		var extra []core.BridgeHost
		h := clientHost(opts, client, logger)
		if h != nil {
			extra = append(extra, h)
		}
		o := openOptions{initDataDir: opts.DataDir, harnesses: opts.Harnesses, notifier: n, extraHosts: extra, serve: true}
		if opts.RequestPermission {
			o.permissions = rpc.PermissionAsker(client)
		}
		// awaitSignals: the answer to initialize goes out only once
		// SIGINT and SIGTERM are handled.
		awaitSignals()
		var e *env
		var err error
		if d, ok := pre.prepared(); ok {
			// The adapters need the data directory but not the
			// database: make them while it opens.
			var h hostSet
			var herr error
			if d.err == nil {
				h, herr = makeHosts(d.cfg, d.dir, o)
			}
			st, perr := pre.take()
			if perr != nil {
				return nil, perr
			}
			if herr != nil {
				st.db.Close()
				return nil, herr
			}
			e, err = a.buildWith(st, h, o)
		} else {
			e, err = a.open(ctx, o)
		}
		if err != nil {
			return nil, err
		}
		return backend{Service: e.svc, e: e, host: h}, nil
	}
}

// preopened is a data directory opened before initialize arrived: its
// folder and configuration first (dir), then its database (ch).
type preopened struct {
	dir   chan preparedDir   // nil when nothing was started
	ch    chan preopenResult // nil when nothing was started
	taken bool
}

// preparedDir is a resolved data directory, created, with its
// configuration read (or the error doing so).
type preparedDir struct {
	dir string
	cfg Config
	err error
}

type preopenResult struct {
	st  store
	err error
}

// preopen notes whether the flag or the environment already decides the
// data directory; serve then opens it while initialize is being read.
func (a *app) preopen(ctx context.Context) *preopened {
	p := &preopened{}
	if a.dataDirFlag == "" && os.Getenv("BRIDGE_DATA_DIR") == "" {
		return p
	}
	p.dir = make(chan preparedDir, 1)
	p.ch = make(chan preopenResult, 1) // serve opens it
	return p
}

// open prepares the data directory, hands it over, then opens its database
// and hands that over.
func (p *preopened) open(ctx context.Context, a *app) {
	dir, cfg, err := a.prepareDir("")
	p.dir <- preparedDir{dir, cfg, err}
	if err != nil {
		p.ch <- preopenResult{err: err}
		return
	}
	st, err := a.openDatabase(ctx, dir, cfg)
	p.ch <- preopenResult{st, err}
}

// prepared returns the prepared data directory once, before take (ok false
// when there is none, or it was taken already: a retried initialize opens
// afresh).
func (p *preopened) prepared() (preparedDir, bool) {
	if p.ch == nil || p.taken {
		return preparedDir{}, false
	}
	return <-p.dir, true
}

// take returns the pre-opened store, after prepared.
func (p *preopened) take() (store, error) {
	p.taken = true
	r := <-p.ch
	return r.st, r.err
}

// release closes a pre-opened store that initialize never took.
func (p *preopened) release() {
	if p.ch == nil || p.taken {
		return
	}
	p.taken = true
	if r := <-p.ch; r.err == nil {
		r.st.db.Close()
	}
}

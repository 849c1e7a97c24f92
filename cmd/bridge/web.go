package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"

	"github.com/bridge-dev/bridge/clients/webui"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/web"
)

// webBackend is one WebSocket connection's view of the shared service.
// Closing it (shutdown, or the tab going away) detaches the connection
// from notifications; the service and database stay open for the others.
type webBackend struct {
	*service.Service
	detach func()
}

// Close detaches this connection only.
func (b webBackend) Close(context.Context) error { b.detach(); return nil }

// web serves the WebUI and the JSON-RPC contract over WebSocket on a
// loopback address, every tab sharing one service and one database.
func (a *app) web(ctx context.Context, args []string) int {
	fs, _ := a.flags("web")
	listen := fs.String("listen", "127.0.0.1:0", "loopback HOST:PORT to serve on (port 0 picks a free port)")
	logLevel := fs.String("log-level", "warn", "stderr log level: debug, info, warn, error")
	if _, err := a.parse(fs, args); err != nil {
		if errors.Is(err, errHelpShown) {
			return 0
		}
		return a.report("web", err)
	}
	lvl, err := parseLogLevel(*logLevel)
	if err != nil {
		return a.report("web", err)
	}
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: lvl}))
	ln, err := web.Listen(*listen)
	if err != nil {
		return a.report("web", usageError{err.Error()})
	}
	defer ln.Close()

	fan := &fanout{targets: map[*fanTarget]struct{}{}, fallback: &cliNotifier{w: a.stderr}}
	asker := newWebAsker()
	e, err := a.open(ctx, openOptions{notifier: fan, permissions: asker, follow: true})
	if err != nil {
		return a.report("web", err)
	}
	defer e.Close(context.WithoutCancel(ctx))

	cfg := rpc.Config{
		Version:   version,
		Harnesses: harnessNames(),
		Logger:    logger,
		Open: func(ctx context.Context, opts rpc.InitOptions, n service.Notifier, client rpc.Caller) (rpc.Backend, error) {
			if opts.HostsSessions {
				return nil, core.Errorf(core.CodeUnsupported,
					"initialize: hosting sessions in the client (hostsSessions) needs the stdio transport (bridge serve); bridge web shares one service among its tabs")
			}
			if opts.DataDir != "" && opts.DataDir != e.dir {
				return nil, core.Errorf(core.CodeInvalid,
					"initialize: initializationOptions.dataDir %q differs from the data directory bridge web serves (%s); start bridge web with --data-dir instead", opts.DataDir, e.dir)
			}
			if len(opts.Harnesses) > 0 {
				return nil, core.Errorf(core.CodeInvalid,
					"initialize: initializationOptions.harnesses cannot change the harnesses bridge web shares among its tabs; use config.json in %s", e.dir)
			}
			detach := fan.attach(n)
			if opts.RequestPermission {
				// This tab answers tool approvals (the WebUI does).
				notified, asked := detach, asker.attach(client)
				detach = func() { asked(); notified() }
			}
			return webBackend{Service: e.svc, detach: detach}, nil
		},
	}
	queue := 0
	if v := os.Getenv("BRIDGE_WEB_QUEUE_MESSAGES"); v != "" {
		if queue, err = strconv.Atoi(v); err != nil || queue < 1 {
			return a.report("web", usageError{fmt.Sprintf("BRIDGE_WEB_QUEUE_MESSAGES %q: want a positive number of messages", v)})
		}
	}
	srv, err := web.New(web.Options{Token: os.Getenv("BRIDGE_WEB_TOKEN"), RPC: cfg, Assets: webui.Assets(), Logger: logger,
		QueueMessages: queue})
	if err != nil {
		return a.report("web", err)
	}
	if path := os.Getenv("BRIDGE_CPUPROFILE"); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			return a.report("web", usageError{fmt.Sprintf("BRIDGE_CPUPROFILE: %v", err)})
		}
		defer stop()
	}
	fmt.Fprintf(a.stdout, "Bridge WebUI: %s\n", srv.URL(ln.Addr()))
	if err := srv.Serve(ctx, ln); err != nil {
		return a.report("web", err)
	}
	return 0
}

// fanout sends the shared service's notifications to every attached
// connection (every open tab); with none attached, warnings go to stderr.
// Sending to a connection never waits for its client: each WebSocket
// connection writes through its own bounded queue (rpc/web), so a tab that
// stops reading delays neither the service nor the other tabs, and is
// disconnected when its queue overflows.
type fanout struct {
	mu       sync.RWMutex
	targets  map[*fanTarget]struct{}
	fallback service.Notifier
}

type fanTarget struct{ n service.Notifier }

// attach adds n; the returned function removes it (once).
func (f *fanout) attach(n service.Notifier) func() {
	t := &fanTarget{n: n}
	f.mu.Lock()
	f.targets[t] = struct{}{}
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.targets, t)
			f.mu.Unlock()
		})
	}
}

func (f *fanout) each(fn func(service.Notifier)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for t := range f.targets {
		fn(t.n)
	}
}

func (f *fanout) EntryAppended(e core.Entry) { f.each(func(n service.Notifier) { n.EntryAppended(e) }) }
func (f *fanout) ContextCompacted(c service.ContextCompacted) {
	f.each(func(n service.Notifier) { n.ContextCompacted(c) })
}
func (f *fanout) CheckpointSaved(c service.CheckpointSaved) {
	f.each(func(n service.Notifier) { n.CheckpointSaved(c) })
}
func (f *fanout) Restored(r service.Restored) { f.each(func(n service.Notifier) { n.Restored(r) }) }
func (f *fanout) Log(level int, msg string) {
	f.mu.RLock()
	none := len(f.targets) == 0
	f.mu.RUnlock()
	if none {
		f.fallback.Log(level, msg)
		return
	}
	f.each(func(n service.Notifier) { n.Log(level, msg) })
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/bridge-dev/bridge/rpc/acp"
)

// acpHint is shown when `bridge acp` reads from a terminal.
const acpHint = `bridge acp: waiting for Agent Client Protocol messages (newline-delimited JSON-RPC) on stdin.
An editor (Zed, JetBrains, Neovim plugins) or acpx starts this; see docs/editors.md. Ctrl-C stops it.
`

// acpAgent is `bridge acp`: Bridge as an Agent Client Protocol agent on
// stdio, over one harness, on the same record and service as serve. It runs
// until the client closes stdin (or a signal), then closes the service the
// way serve's shutdown does (its before_shutdown checkpoints) and exits 0.
func (a *app) acpAgent(ctx context.Context, args []string) int {
	fs, _ := a.flags("acp")
	harness := fs.String("harness", "claude-code", "harness of new sessions")
	preset := fs.String("preset", "", "preset of new sessions (default: the harness's default)")
	model := fs.String("model", "", "model of new sessions (default: the harness's default)")
	logLevel := fs.String("log-level", "warn", "stderr log level: debug, info, warn, error")
	if _, err := a.parse(fs, args); err != nil {
		if errors.Is(err, errHelpShown) {
			return 0
		}
		return a.report("acp", err)
	}
	lvl, err := parseLogLevel(*logLevel)
	if err != nil {
		return a.report("acp", err)
	}
	if _, ok := factory(*harness); !ok {
		return a.report("acp", usageError{fmt.Sprintf("--harness %q: want one of %v", *harness, harnessNames())})
	}
	if isTerminal(a.stdin) {
		fmt.Fprint(a.stderr, acpHint)
	}
	// A client that goes away while a reply is being written must not end
	// the process before its shutdown checkpoints: a write to the closed
	// pipe fails instead.
	signal.Ignore(syscall.SIGPIPE)
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: lvl}))
	srv := acp.New(a.stdout, acp.Options{Harness: *harness, Preset: *preset, Model: *model, Version: version, Logger: logger})
	e, err := a.open(ctx, openOptions{notifier: srv, permissions: srv, serve: true})
	if err != nil {
		return a.report("acp", err)
	}
	if path := os.Getenv("BRIDGE_CPUPROFILE"); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			e.Close(context.WithoutCancel(ctx))
			return a.report("acp", usageError{fmt.Sprintf("BRIDGE_CPUPROFILE: %v", err)})
		}
		defer stop()
	}
	serveErr := srv.Serve(ctx, a.stdin, e.svc)
	if err := e.Close(context.WithoutCancel(ctx)); err != nil {
		logger.Error("bridge acp: closing", "error", err)
		return 1
	}
	if serveErr != nil {
		logger.Error("bridge acp", "error", serveErr)
		return 1
	}
	return 0
}

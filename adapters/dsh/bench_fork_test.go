package dsh_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// BenchmarkCheckpointMethods: adaptertest.BenchCheckpointMethods on one
// session of the real DeepSeek Harness web server against the fake model.
// Its forks are made on the fork server (a second `dsh web` with a DSH_HOME
// of its own, in the idle scheduling class, from a copy of the session's
// log); the benchmark first starts it and waits until it answers
// (fork-server-wait-ms), so that every fork measured runs there. With
// BRIDGE_DSH_BENCH_FORK_SERVER=0 the forks are made on the user's server
// (session.fork on the same server), as before the fork server.
func BenchmarkCheckpointMethods(b *testing.B) {
	model, err := fakemodel.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer model.Close()
	model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		if strings.Contains(r.LastUserText, "Bridge checkpoint request") {
			return fakemodel.Reply{Text: adaptertest.BenchCheckpointReply}, true
		}
		return fakemodel.Reply{Text: "Noted: turn answered."}, true
	})
	r := dshtest.StartReal(b, model.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cfg := dsh.Config{BaseURL: r.URL, PollInterval: 20 * time.Millisecond}
	if os.Getenv("BRIDGE_DSH_BENCH_FORK_SERVER") != "0" {
		command, args, env := r.ForkProgram()
		cfg.ForkServer = dsh.ForkServer{Command: command, Args: args, Env: env, Home: r.Home, StateDir: b.TempDir()}
	}
	h := dsh.New(cfg)
	defer h.Close(context.Background())
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	if cfg.ForkServer.Command != "" {
		start := time.Now()
		if err := dsh.AwaitForkServer(ctx, h); err != nil {
			b.Fatal(err)
		}
		wait := time.Since(start)
		// After the run: its ResetTimer deletes the metrics reported before.
		defer b.ReportMetric(float64(wait.Milliseconds()), "fork-server-wait-ms")
	}
	adaptertest.BenchCheckpointMethods(b, ctx, l, func() string {
		rs := model.Requests()
		for i := len(rs) - 1; i >= 0; i-- {
			if strings.Contains(rs[i].LastUserText, adaptertest.BenchOrdinaryTurn) {
				return string(rs[i].Body)
			}
		}
		return ""
	})
}

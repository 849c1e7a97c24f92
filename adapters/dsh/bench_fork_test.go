package dsh_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
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
	// The CPU the user's server and the fork server spend over the run,
	// per iteration (after the run: ResetTimer deletes metrics reported
	// before it).
	liveCPU, forkPID := cpuMs(r.PID()), dsh.ForkServerPID(h)
	forkCPU := cpuMs(forkPID)
	defer func() {
		b.ReportMetric((cpuMs(r.PID())-liveCPU)/float64(b.N), "live-server-cpu-ms/op")
		if forkPID != 0 {
			b.ReportMetric((cpuMs(forkPID)-forkCPU)/float64(b.N), "fork-server-cpu-ms/op")
		}
	}()
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

// cpuMs is the CPU time (user and system) process pid has used, in
// milliseconds, from /proc (0 where it cannot be read).
func cpuMs(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid == 0 {
		return 0
	}
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) * 10 // USER_HZ is 100 on Linux
}

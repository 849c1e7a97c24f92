package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
)

// buildHelper builds one of cmd/bridge/internal's baseline programs.
func buildHelper(b *testing.B, name string) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), name)
	if msg, err := exec.Command("go", "build", "-o", out, "./internal/"+name).CombinedOutput(); err != nil {
		b.Fatalf("build %s: %v\n%s", name, err, msg)
	}
	return out
}

// seedSession writes a session of n entries (every other one a message)
// straight into a data directory's database.
func seedSession(b testing.TB, dir string, n int) string {
	b.Helper()
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(dir, DatabaseFile), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/tmp", Title: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]core.NewEntry, 0, 1000)
	for i := 0; i < n; i++ {
		kind := core.KindAssistantMessage
		payload := core.Payload(map[string]any{"text": fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 8))})
		if i%2 == 1 {
			kind = core.KindToolCompleted
			payload = core.Payload(map[string]any{"toolId": fmt.Sprintf("t%d", i), "output": "ok"})
		}
		batch = append(batch, core.NewEntry{Kind: kind, Payload: payload})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := db.Append(ctx, s.ID, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return s.ID
}

// BenchmarkStartup: exec to initialize answered, against a bare Go binary
// that opens the same database (exec to its "open" line). Goal: bridge ≤
// 1.3× bare. "bare" and "bridge" run one after the other; "paired" runs
// one of each per iteration and reports their ratio, which holds better
// when the machine's load changes during the run.
func BenchmarkStartup(b *testing.B) {
	dir := b.TempDir()
	seedSession(b, dir, 100)
	bare := buildHelper(b, "bareopen")
	// Each returns the time to its answer; closing is not timed.
	runBare := func(b *testing.B) time.Duration {
		cmd := exec.Command(bare, filepath.Join(dir, DatabaseFile))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		d := time.Since(start)
		if werr := cmd.Wait(); line != "open\n" || err != nil || werr != nil {
			b.Fatalf("bareopen: %q %v %v: %s", line, err, werr, stderr.String())
		}
		return d
	}
	runBridge := func(b *testing.B) time.Duration {
		start := time.Now()
		c := startBridge(b, dir)
		rpctest.Must(c.Client, c.Initialize, schema.InitializeParams{})
		d := time.Since(start)
		c.exit(true)
		return d
	}
	for _, r := range []struct {
		name string
		run  func(*testing.B) time.Duration
	}{{"bare", runBare}, {"bridge", runBridge}} {
		b.Run(r.name, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				total += r.run(b)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/exec")
		})
	}
	b.Run("paired", func(b *testing.B) {
		var bareT, bridgeT time.Duration
		for i := 0; i < b.N; i++ {
			bareT += runBare(b)
			bridgeT += runBridge(b)
		}
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(float64(bareT.Nanoseconds())/float64(b.N), "bare-ns/exec")
		b.ReportMetric(float64(bridgeT.Nanoseconds())/float64(b.N), "bridge-ns/exec")
		b.ReportMetric(float64(bridgeT)/float64(bareT), "bridge/bare")
	})
}

// BenchmarkHistoryAcrossProcesses: a session/history page of 60 messages
// from a bridge process, against a raw jsonrpc2 echo server process
// answering a payload of the same size. Goal: bridge ≥ 0.6× echo's rate.
func BenchmarkHistoryAcrossProcesses(b *testing.B) {
	dir := b.TempDir()
	sid := seedSession(b, dir, 1000)
	c := startBridge(b, dir)
	c.initialize(nil)
	var page json.RawMessage
	c.MustCall("session/history", schema.SessionHistoryParams{SessionID: sid, MaxMessages: 60}, &page) // raw: echo answers it back
	// Both legs take their reply undecoded (out nil), so the client's cost
	// is the same on each side and the ratio is the servers'; a typed
	// call would add decoding 60 entries to Bridge's leg only.
	params := schema.SessionHistoryParams{SessionID: sid, MaxMessages: 60}
	b.Run("bridge", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for i := 0; i < b.N; i++ {
			c.MustCall("session/history", params, nil)
		}
	})
	echo := startProcess(b, exec.Command(buildHelper(b, "echoserver")))
	b.Run("echo", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for i := 0; i < b.N; i++ {
			echo.MustCall("echo", page, nil)
		}
	})
	// One call to each per iteration: the ratio holds better when the
	// machine's load changes during the run.
	b.Run("paired", func(b *testing.B) {
		var bridgeT, echoT time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			c.MustCall("session/history", params, nil)
			mid := time.Now()
			echo.MustCall("echo", page, nil)
			bridgeT, echoT = bridgeT+mid.Sub(start), echoT+time.Since(mid)
		}
		b.ReportMetric(float64(bridgeT.Nanoseconds())/float64(b.N), "bridge-ns/call")
		b.ReportMetric(float64(echoT.Nanoseconds())/float64(b.N), "echo-ns/call")
		b.ReportMetric(float64(echoT)/float64(bridgeT), "bridge/echo-rate")
	})
	c.exit(true)
	echo.stdin.Close()
	os.Getpid()
}

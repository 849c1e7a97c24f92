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

	"github.com/bridge-dev/bridge/core"
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
// 1.3× bare.
func BenchmarkStartup(b *testing.B) {
	dir := b.TempDir()
	seedSession(b, dir, 100)
	bare := buildHelper(b, "bareopen")
	b.Run("bare", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			// Timed to its "open" line; it closes the database outside the
			// time, as bridge exits outside it.
			cmd := exec.Command(bare, filepath.Join(dir, DatabaseFile))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			b.StopTimer()
			if werr := cmd.Wait(); line != "open\n" || err != nil || werr != nil {
				b.Fatalf("bareopen: %q %v %v: %s", line, err, werr, stderr.String())
			}
			b.StartTimer()
		}
	})
	b.Run("bridge", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			c := startBridge(b, dir)
			c.mustCall("initialize", map[string]any{"capabilities": map[string]any{}}, nil)
			b.StopTimer()
			c.exit(true)
			b.StartTimer()
		}
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
	c.mustCall("session/history", map[string]any{"sessionId": sid, "maxMessages": 60}, &page)
	b.Run("bridge", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for i := 0; i < b.N; i++ {
			c.mustCall("session/history", map[string]any{"sessionId": sid, "maxMessages": 60}, nil)
		}
	})
	echo := startProcess(b, exec.Command(buildHelper(b, "echoserver")))
	b.Run("echo", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for i := 0; i < b.N; i++ {
			echo.mustCall("echo", page, nil)
		}
	})
	c.exit(true)
	echo.stdin.Close()
	os.Getpid()
}

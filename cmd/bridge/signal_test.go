package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalShutsDownCleanly sends SIGTERM and SIGINT to a serving bridge with
// a session open: it exits 0 and writes no error line, and the session's
// record is intact for the next process.
func TestSignalShutsDownCleanly(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			c := startBridge(t, dir)
			c.initialize(nil)
			sid := createFake(t, c)
			c.mustCall("session/prompt", map[string]any{"sessionId": sid, "content": prompt("hello")}, nil)
			if err := c.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.done:
			case <-time.After(30 * time.Second):
				t.Fatalf("bridge did not exit after %v; stderr:\n%s", sig, c.stderr.String())
			}
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("after %v: %v; stderr:\n%s", sig, err, c.stderr.String())
			}
			if s := c.stderr.String(); strings.Contains(s, "ERROR") || strings.Contains(s, "context canceled") {
				t.Fatalf("after %v stderr has an error line:\n%s", sig, s)
			}
			out, stderr, code := runCLI(t, nil, "--data-dir", dir, "history", sid, "--json")
			if code != 0 || !strings.Contains(out, "hello") {
				t.Fatalf("history after %v: exit %d\n%s\n%s", sig, code, out, stderr)
			}
		})
	}
}

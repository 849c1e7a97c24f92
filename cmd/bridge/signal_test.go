package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
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
			rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("hello")})
			if err := c.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.Done():
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

// TestBackToBackShutdownThroughTheBinary writes initialize, a request,
// shutdown and exit in one go to a fresh bridge process, many times: every
// reply arrives, in order, and the exit status is 0.
func TestBackToBackShutdownThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	var in bytes.Buffer
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`,
		`{"jsonrpc":"2.0","method":"initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"shutdown"}`,
		`{"jsonrpc":"2.0","method":"exit"}`,
	} {
		fmt.Fprintf(&in, "Content-Length: %d\r\n\r\n%s", len(m), m)
	}
	for run := range 50 {
		cmd := exec.Command(binPath, "--data-dir", dir, "serve")
		cmd.Stdin = bytes.NewReader(in.Bytes())
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, stderr.String())
		}
		var ids []string
		r := bufio.NewReader(&out)
		for {
			var n int
			if _, err := fmt.Fscanf(r, "Content-Length: %d\r\n\r\n", &n); err != nil {
				break
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(r, body); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("run %d: %s: %v", run, body, err)
			}
			if m.Method == "" {
				ids = append(ids, string(m.ID))
			}
		}
		if strings.Join(ids, ",") != "1,2,3" {
			t.Fatalf("run %d: replies %v, want 1,2,3 in that order\nstderr: %s", run, ids, stderr.String())
		}
	}
}

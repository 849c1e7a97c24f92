package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// hugeLineTranscript writes a Claude Code transcript whose last line holds
// a user message of mb megabytes.
func hugeLineTranscript(t *testing.T, mb int) string {
	t.Helper()
	good := filepath.Join("..", "..", "testdata", "claude-code", "transcript-with-compact-boundary.recorded.jsonl")
	head, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "huge.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(head)
	f.WriteString(`{"type":"user","uuid":"u-huge","sessionId":"huge","message":{"role":"user","content":"`)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; i < mb; i++ {
		f.Write(chunk)
	}
	f.WriteString("\"}}\n")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportOverRPCRefusesAndKeepsWriting: over JSON-RPC, session/import of
// a 200 MB line, of an entry over the per-entry limit, of /dev/zero, of a
// FIFO, of the sidecar's own standard input and of /etc/passwd is answered
// with a short invalid_params error; the sidecar keeps serving and writing,
// and shuts down cleanly.
func TestImportOverRPCRefusesAndKeepsWriting(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(t.TempDir(), "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startBridge(t, dir)
	c.initialize(nil)
	for _, tc := range []struct{ name, path, want string }{
		{"200 MB line", hugeLineTranscript(t, 200), "longer than the limit"},
		{"40 MB entry", hugeLineTranscript(t, 40), "maxEntryBytes"},
		{"/dev/zero", "/dev/zero", "system file"},
		{"/dev/stdin", "/dev/stdin", "system file"},
		{"/proc/self/fd/0", "/proc/self/fd/0", "system file"},
		{"fifo", fifo, "FIFO"},
		{"/etc/passwd", "/etc/passwd", "not a Claude Code transcript"},
	} {
		e := rpctest.ErrorOf(c.SessionImport(t.Context(), schema.SessionImportParams{Harness: "claude-code", Path: tc.path}))
		if e == nil {
			t.Fatalf("%s: imported", tc.name)
		}
		if e.DataCode() != "invalid" || !strings.Contains(e.Message, tc.want) || len(e.Message) > 400 {
			t.Errorf("%s: got %d %q (data %s); want a short invalid error containing %q", tc.name, e.Code, e.Message, e.Data, tc.want)
		}
	}
	list := rpctest.Must(c.Client, c.SessionList, schema.SessionListParams{})
	if len(list.Items) != 0 {
		t.Fatalf("refused imports recorded sessions: %+v", list.Items)
	}
	good := filepath.Join("..", "..", "testdata", "claude-code", "transcript-with-compact-boundary.recorded.jsonl")
	out := rpctest.Must(c.Client, c.SessionImport, schema.SessionImportParams{Harness: "claude-code", Path: good})
	if out.Entries == 0 {
		t.Fatalf("import after the refusals added nothing: %+v", out)
	}
	list = rpctest.Must(c.Client, c.SessionList, schema.SessionListParams{})
	if len(list.Items) != 1 || list.Items[0].SessionID != out.SessionID {
		t.Fatalf("sessions after the refusals: %+v, want only %s", list.Items, out.SessionID)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, c.stderr.String())
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
		e := c.call("session/import", map[string]any{"harness": "claude-code", "path": tc.path}, nil)
		if e == nil {
			t.Fatalf("%s: imported", tc.name)
		}
		if e.DataCode() != "invalid" || !strings.Contains(e.Message, tc.want) || len(e.Message) > 400 {
			t.Errorf("%s: got %d %q (data %s); want a short invalid error containing %q", tc.name, e.Code, e.Message, e.Data, tc.want)
		}
	}
	var list struct {
		Items []struct {
			SessionID string `json:"sessionId"`
		} `json:"items"`
	}
	c.MustCall("session/list", map[string]any{}, &list)
	if len(list.Items) != 0 {
		t.Fatalf("refused imports recorded sessions: %+v", list.Items)
	}
	var out struct {
		SessionID string `json:"sessionId"`
		Entries   int    `json:"entries"`
	}
	good := filepath.Join("..", "..", "testdata", "claude-code", "transcript-with-compact-boundary.recorded.jsonl")
	c.MustCall("session/import", map[string]any{"harness": "claude-code", "path": good}, &out)
	if out.Entries == 0 {
		t.Fatalf("import after the refusals added nothing: %+v", out)
	}
	c.MustCall("session/list", map[string]any{}, &list)
	if len(list.Items) != 1 || list.Items[0].SessionID != out.SessionID {
		t.Fatalf("sessions after the refusals: %+v, want only %s", list.Items, out.SessionID)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, c.stderr.String())
	}
}

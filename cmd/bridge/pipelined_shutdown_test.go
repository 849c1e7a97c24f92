package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
)

// TestRequestsPipelinedBeforeShutdownGetTheirResults writes what `bridge
// serve < requests` or any batch client writes: session/create,
// session/list, shutdown and exit in one go, then the end of input. Every
// request received before shutdown must finish and answer with its real
// result before the database closes (it used to be answered "storage:
// database is closed" in about half the runs: exit closed the store while
// shutdown still waited for the create). It runs `bridge serve` in this
// process (Main, the real stdio path: LSP framing, the rpc server, the
// service, SQLite) 200 times on one data directory, so that each list also
// shows every session the runs before it created.
func TestRequestsPipelinedBeforeShutdownGetTheirResults(t *testing.T) {
	const runs = 200
	dir := t.TempDir()
	cwd := t.TempDir()
	var in bytes.Buffer
	for _, m := range []map[string]any{
		{"id": 1, "method": "initialize", "params": map[string]any{"capabilities": map[string]any{}}},
		{"method": "initialized", "params": map[string]any{}},
		{"id": 2, "method": "session/create", "params": map[string]any{"harness": "fake", "cwd": cwd}},
		{"id": 3, "method": "session/list", "params": map[string]any{"limit": 1000}},
		{"id": 4, "method": "shutdown"},
		{"method": "exit"},
	} {
		m["jsonrpc"] = "2.0"
		body := mustJSON(m)
		fmt.Fprintf(&in, "Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	created := map[string]bool{}
	for run := range runs {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), []string{"--data-dir", dir, "serve"}, bytes.NewReader(in.Bytes()), &out, &errOut)
		if code != 0 {
			t.Fatalf("run %d: exit code %d, want 0; stderr:\n%s", run, code, errOut.String())
		}
		replies := repliesByID(t, out.Bytes())
		for id := 1; id <= 4; id++ {
			r, ok := replies[id]
			if !ok {
				t.Fatalf("run %d: no reply to request %d; stdout:\n%s", run, id, out.String())
			}
			if r.Error != nil {
				t.Fatalf("run %d: request %d answered with error %d %q (data %s)", run, id, r.Error.Code, r.Error.Message, r.Error.Data)
			}
		}
		var c struct {
			SessionID string `json:"sessionId"`
			Harness   string `json:"harness"`
		}
		if err := json.Unmarshal(replies[2].Result, &c); err != nil || !strings.HasPrefix(c.SessionID, "s_") || c.Harness != "fake" {
			t.Fatalf("run %d: session/create result %s (%v), want a new fake session", run, replies[2].Result, err)
		}
		var l struct {
			Items []struct {
				SessionID string `json:"sessionId"`
			} `json:"items"`
		}
		if err := json.Unmarshal(replies[3].Result, &l); err != nil {
			t.Fatalf("run %d: session/list result %s: %v", run, replies[3].Result, err)
		}
		listed := map[string]bool{}
		for _, it := range l.Items {
			listed[it.SessionID] = true
		}
		for id := range created {
			if !listed[id] {
				t.Fatalf("run %d: session/list lacks %s, created by an earlier run; result %s", run, id, replies[3].Result)
			}
		}
		if string(replies[4].Result) != "null" {
			t.Fatalf("run %d: shutdown result %s, want null", run, replies[4].Result)
		}
		created[c.SessionID] = true
	}
}

// repliesByID parses the LSP frames of out and returns the responses by
// numeric id (notifications are skipped).
func repliesByID(t *testing.T, out []byte) map[int]wireMsg {
	t.Helper()
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(out)))
	got := map[int]wireMsg{}
	for {
		h, err := r.ReadMIMEHeader()
		if err == io.EOF && len(h) == 0 {
			return got
		}
		if err != nil {
			t.Fatalf("reading a frame header: %v; stdout:\n%s", err, out)
		}
		n, err := strconv.Atoi(h.Get("Content-Length"))
		if err != nil {
			t.Fatalf("frame header %v: %v", h, err)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r.R, body); err != nil {
			t.Fatalf("frame body: %v", err)
		}
		var m wireMsg
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("frame body %s: %v", body, err)
		}
		if m.Method != "" {
			continue
		}
		id, err := strconv.Atoi(string(m.ID))
		if err != nil {
			t.Fatalf("reply with a non-numeric id: %s", body)
		}
		if _, dup := got[id]; dup {
			t.Fatalf("two replies to request %d", id)
		}
		got[id] = m
	}
}

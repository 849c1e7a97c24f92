package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type sessionRef struct {
	SessionID string `json:"sessionId"`
	Harness   string `json:"harness"`
}

type entryWire struct {
	ID        string          `json:"id"`
	SessionID string          `json:"sessionId"`
	ParentID  string          `json:"parentId"`
	Seq       int64           `json:"seq"`
	Kind      string          `json:"kind"`
	Payload   json.RawMessage `json:"payload"`
}

func createFake(t *testing.T, c *client) string {
	t.Helper()
	var s sessionRef
	c.mustCall("session/create", map[string]any{"harness": "fake", "cwd": t.TempDir(), "title": "e2e"}, &s)
	if s.SessionID == "" || s.Harness != "fake" {
		t.Fatalf("session/create = %+v", s)
	}
	return s.SessionID
}

func prompt(text string) []map[string]any {
	return []map[string]any{{"type": "text", "text": text}}
}

func TestLifecycle(t *testing.T) {
	c := startBridge(t, t.TempDir())
	if e := c.call("session/list", map[string]any{}, nil); e == nil || e.Code != -32002 {
		t.Fatalf("request before initialize: %+v, want -32002", e)
	}
	c.initialize(nil)
	if e := c.call("initialize", map[string]any{"capabilities": map[string]any{}}, nil); e == nil || e.Code != -32600 {
		t.Fatalf("second initialize: %+v, want -32600", e)
	}
	c.mustCall("session/list", map[string]any{}, nil)
	c.mustCall("shutdown", nil, nil)
	c.mustCall("shutdown", nil, nil) // idempotent
	if e := c.call("session/list", map[string]any{}, nil); e == nil || e.Code != -32600 {
		t.Fatalf("request after shutdown: %+v, want -32600", e)
	}
	if code := c.exit(false); code != 0 {
		t.Fatalf("exit after shutdown: code %d, want 0", code)
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	c := startBridge(t, t.TempDir())
	c.initialize(nil)
	if code := c.exit(false); code != 1 {
		t.Fatalf("exit without shutdown: code %d, want 1", code)
	}
}

func TestErrors(t *testing.T) {
	c := startBridge(t, t.TempDir(), "BRIDGE_MAX_CONTENT_LENGTH=4096")
	c.initialize(nil)

	// A malformed body is answered with -32700 and id null; the
	// connection carries on.
	c.writeRaw([]byte(`{"jsonrpc":"2.0","id":77,"method":`))
	m := c.wait("null")
	if m.Error == nil || m.Error.Code != -32700 {
		t.Fatalf("malformed JSON: %+v, want -32700", m)
	}
	c.mustCall("session/list", map[string]any{}, nil)

	// A body over the limit is refused and skipped.
	big := `{"jsonrpc":"2.0","id":78,"method":"session/list","params":{"cursor":"` + strings.Repeat("x", 10000) + `"}}`
	c.writeRaw([]byte(big))
	m = c.wait("null")
	if m.Error == nil || (m.Error.Code != -32600 && m.Error.Code != -32700) || !strings.Contains(strings.ToLower(m.Error.Message), "limit") {
		t.Fatalf("oversized body: %+v, want a refusal naming the limit", m.Error)
	}
	c.mustCall("session/list", map[string]any{}, nil)

	if e := c.call("no/such", map[string]any{}, nil); e == nil || e.Code != -32601 {
		t.Fatalf("unknown method: %+v, want -32601", e)
	}
	e := c.call("session/create", map[string]any{"cwd": "/tmp"}, nil)
	if e == nil || e.Code != -32602 || !strings.Contains(e.Message, "harness") {
		t.Fatalf("missing harness: %+v, want -32602 naming harness", e)
	}
	e = c.call("session/history", map[string]any{"sessionId": 12}, nil)
	if e == nil || e.Code != -32602 || !strings.Contains(e.Message, "sessionId") {
		t.Fatalf("wrong type: %+v, want -32602 naming sessionId", e)
	}
	e = c.call("session/history", map[string]any{"sessionId": "s_missing"}, nil)
	if e == nil || e.dataCode() != "not_found" {
		t.Fatalf("unknown session: %+v, want data.code not_found", e)
	}
	e = c.call("session/create", map[string]any{"harness": "nope", "cwd": "/tmp"}, nil)
	if e == nil || e.dataCode() != "unavailable" {
		t.Fatalf("unknown harness: %+v, want data.code unavailable", e)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

func TestSliceOverFake(t *testing.T) {
	dir := t.TempDir()
	c := startBridge(t, dir)
	c.initialize(nil)
	sid := createFake(t, c)

	var pr struct {
		StopReason string `json:"stopReason"`
	}
	c.mustCall("session/prompt", map[string]any{"sessionId": sid, "content": prompt("say hello there\ntool ls /tmp\nfile src/a.go")}, &pr)
	if pr.StopReason != "end_turn" {
		t.Fatalf("stopReason %q", pr.StopReason)
	}
	kinds := map[string]int{}
	for _, n := range c.notesOf("session/update") {
		var u struct {
			SessionID string    `json:"sessionId"`
			Entry     entryWire `json:"entry"`
		}
		if err := json.Unmarshal(n.Params, &u); err != nil || u.SessionID != sid {
			t.Fatalf("session/update %s: %v", n.Params, err)
		}
		kinds[u.Entry.Kind]++
	}
	for _, k := range []string{"user.message", "assistant.message", "tool.started", "tool.completed", "artifact.created"} {
		if kinds[k] == 0 {
			t.Errorf("no session/update with a %s entry (got %v)", k, kinds)
		}
	}

	var hist struct {
		Entries []entryWire `json:"entries"`
		HasMore bool        `json:"hasMore"`
	}
	c.mustCall("session/history", map[string]any{"sessionId": sid}, &hist)
	if len(hist.Entries) < 5 || hist.HasMore {
		t.Fatalf("history: %d entries, hasMore %v", len(hist.Entries), hist.HasMore)
	}
	for i := 1; i < len(hist.Entries); i++ {
		if hist.Entries[i].ParentID != hist.Entries[i-1].ID || hist.Entries[i].Seq <= hist.Entries[i-1].Seq {
			t.Fatalf("history is not a chain in order at %d: %+v", i, hist.Entries[i])
		}
	}
	if !strings.Contains(string(hist.Entries[0].Payload), "say hello there") {
		t.Fatalf("first entry should be the user's message: %s", hist.Entries[0].Payload)
	}

	c.mustCall("session/rename", map[string]any{"sessionId": sid, "title": "renamed"}, nil)
	var list struct {
		Items []struct {
			SessionID string `json:"sessionId"`
			Title     string `json:"title"`
			Archived  bool   `json:"archived"`
		} `json:"items"`
	}
	c.mustCall("session/list", map[string]any{}, &list)
	if len(list.Items) != 1 || list.Items[0].Title != "renamed" {
		t.Fatalf("list after rename: %+v", list.Items)
	}
	c.mustCall("session/cancel", map[string]any{"sessionId": sid}, nil) // idle: not an error
	c.mustCall("session/archive", map[string]any{"sessionId": sid}, nil)
	c.mustCall("session/list", map[string]any{}, &list)
	if len(list.Items) != 0 {
		t.Fatalf("archived session still listed by default: %+v", list.Items)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

func TestCancelAndConcurrency(t *testing.T) {
	c := startBridge(t, t.TempDir())
	c.initialize(nil)
	sid := createFake(t, c)
	sid2 := createFake(t, c)
	for _, rawID := range []string{`9001`, `"slow-one"`} {
		target := sid
		if rawID != `9001` {
			target = sid2
		}
		c.sendWithID(rawID, "session/prompt", map[string]any{"sessionId": target, "content": prompt("hang")})
		// A slow request never blocks a fast one.
		c.mustCall("session/list", map[string]any{}, nil)
		c.notify("$/cancelRequest", map[string]any{"id": json.RawMessage(rawID)})
		m := c.wait(rawID)
		if m.Error == nil || m.Error.Code != -32800 {
			t.Fatalf("cancelled request %s: %+v, want -32800", rawID, m)
		}
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestPlainBridgeServes: `bridge` with stdin not a terminal is `bridge serve`.
func TestPlainBridgeServes(t *testing.T) {
	c := startProcess(t, exec.Command(binPath), "BRIDGE_DATA_DIR="+t.TempDir())
	c.initialize(nil)
	c.mustCall("session/list", map[string]any{}, nil)
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestDataDirFromInitialize: with no flag or variable, the client's
// initializationOptions.dataDir is the data directory.
func TestDataDirFromInitialize(t *testing.T) {
	dir, xdg := t.TempDir(), t.TempDir()
	c := startProcess(t, exec.Command(binPath, "serve"), "BRIDGE_DATA_DIR=", "XDG_DATA_HOME="+xdg)
	c.initialize(map[string]any{"dataDir": dir})
	var rep struct {
		DataDir string `json:"dataDir"`
	}
	c.mustCall("bridge/doctor", map[string]any{"harness": "fake"}, &rep)
	if rep.DataDir != dir {
		t.Fatalf("dataDir %q, want %q", rep.DataDir, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, DatabaseFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(xdg, "bridge")); err == nil {
		t.Fatal("the XDG default was created although the client named a data directory")
	}
	c.exit(true)
}

// TestWorkDoneProgressCancelStopsPrompt: the cancel button of a progress
// (window/workDoneProgress/cancel) stops the running prompt, and the
// session takes the next prompt.
func TestWorkDoneProgressCancelStopsPrompt(t *testing.T) {
	c := startBridge(t, t.TempDir())
	c.initialize(nil)
	sid := createFake(t, c)
	c.sendWithID(`4242`, "session/prompt", map[string]any{"sessionId": sid, "workDoneToken": "p-1", "content": prompt("hang")})
	c.awaitNote("progress begin", func(m wireMsg) bool {
		return m.Method == "$/progress" && strings.Contains(string(m.Params), `"p-1"`) && strings.Contains(string(m.Params), `"begin"`)
	})
	c.notify("window/workDoneProgress/cancel", map[string]any{"token": "p-1"})
	if m := c.wait(`4242`); m.Error == nil || m.Error.Code != -32800 {
		t.Fatalf("prompt after its progress was cancelled: %+v, want -32800", m)
	}
	c.awaitNote("progress end", func(m wireMsg) bool {
		return m.Method == "$/progress" && strings.Contains(string(m.Params), `"p-1"`) && strings.Contains(string(m.Params), `"cancelled"`)
	})
	c.mustCall("session/prompt", map[string]any{"sessionId": sid, "content": prompt("again")}, nil)
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

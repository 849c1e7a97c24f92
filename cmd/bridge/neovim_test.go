package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// neovimReport is what testdata/neovim/bridge_lsp.lua records.
type neovimReport struct {
	Failure            string `json:"failure"`
	ServerCapabilities struct {
		Methods      []string `json:"methods"`
		Experimental struct {
			Methods []string `json:"methods"`
		} `json:"experimental"`
	} `json:"server_capabilities"`
	Steps []struct {
		Method string          `json:"method"`
		Err    *wireError      `json:"err"`
		Result json.RawMessage `json:"result"`
	} `json:"steps"`
	Updates []struct {
		SessionID string `json:"sessionId"`
		Entry     struct {
			Kind    string `json:"kind"`
			Payload struct {
				Text string `json:"text"`
			} `json:"payload"`
		} `json:"entry"`
	} `json:"updates"`
	CancelAcknowledged bool `json:"cancel_acknowledged"`
	Exit               *struct {
		Code   int `json:"code"`
		Signal int `json:"signal"`
	} `json:"exit"`
	LogPath string `json:"log_path"`
}

// TestNeovimLSPClient: Neovim's built-in LSP client (vim.lsp, Debian's
// neovim 0.7), configured as docs/editors.md shows and with its default
// client capabilities, drives `bridge serve` end to end: initialize,
// session/create, a prompt on the fake harness with its session/update
// notifications, history, search, a turn cancelled with $/cancelRequest,
// MethodNotFound for textDocument/hover, and shutdown and exit with code 0.
// Without nvim on PATH the test fails: .ci/test installs it.
func TestNeovimLSPClient(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		t.Fatal("nvim is not on PATH: Neovim's LSP client is the real editor this test drives (apt-get install neovim; .ci/test does)")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "testdata", "neovim", "bridge_lsp.lua"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cwd := t.TempDir()
	reportPath := filepath.Join(tmp, "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", "luafile "+script)
	cmd.Env = append(os.Environ(), "BRIDGE_BIN="+binPath, "BRIDGE_DATA_DIR="+filepath.Join(tmp, "data"),
		"BRIDGE_CWD="+cwd, "BRIDGE_REPORT="+reportPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nvim: %v\n%s", err, out)
	}
	b, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatalf("nvim wrote no report: %v\n%s", err, out)
	}
	var r neovimReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report %s: %v", b, err)
	}
	logText := func() string {
		l, _ := os.ReadFile(r.LogPath)
		return string(l)
	}
	if r.Failure != "" {
		t.Fatalf("the Neovim script failed: %s\nnvim output:\n%s\nLSP log:\n%s", r.Failure, out, logText())
	}
	// Neovim sent its default capabilities, LSP's object shapes included.
	if log := logText(); !strings.Contains(log, "messageActionItem") {
		t.Errorf("the LSP log does not show Neovim's default window.showMessage capability:\n%s", log)
	}
	// vim.lsp keeps the initialize result's capabilities as sent.
	caps := r.ServerCapabilities
	if !slices.Contains(caps.Methods, "session/create") || !slices.Equal(caps.Experimental.Methods, caps.Methods) {
		t.Errorf("server capabilities as Neovim kept them: %+v", caps)
	}

	want := []string{"session/create", "session/prompt", "session/history", "session/search", "session/prompt", "textDocument/hover"}
	var got []string
	for _, s := range r.Steps {
		got = append(got, s.Method)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for i, s := range r.Steps[:5] {
		if s.Err != nil {
			t.Errorf("%s (step %d): error %d %s", s.Method, i, s.Err.Code, s.Err.Message)
		}
	}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(r.Steps[0].Result, &created)
	var prompt, after struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(r.Steps[1].Result, &prompt)
	_ = json.Unmarshal(r.Steps[4].Result, &after)
	if !strings.HasPrefix(created.SessionID, "s_") || prompt.StopReason != "end_turn" || after.StopReason != "end_turn" {
		t.Errorf("create %s, prompt %s, prompt after the cancel %s", r.Steps[0].Result, r.Steps[1].Result, r.Steps[4].Result)
	}
	var history struct {
		Entries []struct {
			Kind    string `json:"kind"`
			Payload struct {
				Text string `json:"text"`
			} `json:"payload"`
		} `json:"entries"`
	}
	_ = json.Unmarshal(r.Steps[2].Result, &history)
	if len(history.Entries) != 2 || history.Entries[0].Kind != "user.message" ||
		history.Entries[1].Kind != "assistant.message" || history.Entries[1].Payload.Text != "hello from neovim" {
		t.Errorf("history %s", r.Steps[2].Result)
	}
	var search struct {
		Hits []struct {
			SessionID string `json:"sessionId"`
		} `json:"hits"`
	}
	_ = json.Unmarshal(r.Steps[3].Result, &search)
	if len(search.Hits) == 0 || search.Hits[0].SessionID != created.SessionID {
		t.Errorf("search for neovim: %s", r.Steps[3].Result)
	}
	// The turn's entries reached Neovim's handler for session/update.
	saw := false
	for _, u := range r.Updates {
		if u.SessionID == created.SessionID && u.Entry.Kind == "assistant.message" && u.Entry.Payload.Text == "hello from neovim" {
			saw = true
		}
	}
	if !saw {
		t.Errorf("no session/update with the assistant's reply among %d notifications", len(r.Updates))
	}
	if !r.CancelAcknowledged {
		t.Errorf("the cancelled turn was not answered -32800 (Neovim logs the answer it drops); LSP log:\n%s", logText())
	}
	if e := r.Steps[5].Err; e == nil || e.Code != -32601 {
		t.Errorf("textDocument/hover: %+v %s, want error -32601", e, r.Steps[5].Result)
	}
	if r.Exit == nil || r.Exit.Code != 0 || r.Exit.Signal != 0 {
		t.Errorf("bridge serve's exit as Neovim saw it: %+v, want code 0", r.Exit)
	}
}

package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestDiscoverProgress: session/import {discover: true} with a
// workDoneToken reports $/progress (begin, a report per transcript, end)
// and answers with the summary per harness; `bridge import --discover` on
// a terminal draws a progress line on stderr.
func TestDiscoverProgress(t *testing.T) {
	env, _ := harnessHomes(t, t.TempDir())
	c := startBridge(t, t.TempDir(), env...)
	c.initialize(nil)
	token := schema.StringToken("disc-1")
	res := rpctest.Must(c.Client, c.SessionImport, schema.SessionImportParams{Discover: true, WorkDoneProgressParams: schema.WorkDoneProgressParams{WorkDoneToken: &token}})
	imported := 0
	for _, d := range res.Discovered {
		imported += d.Imported
	}
	if imported != 5 || res.Entries == 0 {
		t.Fatalf("session/import discover = %+v; want the 5 transcripts imported", res)
	}
	kinds := map[string]int{}
	reports := 0
	for _, p := range rpctest.Notes(c.Client, schema.NoticeProgress) {
		if p.Token != token {
			continue
		}
		kinds[p.Value.Kind]++
		if p.Value.Kind == "report" && strings.Contains(p.Value.Message, ".jsonl") {
			reports++
		}
	}
	if kinds["begin"] != 1 || kinds["end"] != 1 || reports == 0 {
		t.Fatalf("$/progress for the discovery: %v (%d reports naming a transcript)", kinds, reports)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit %d", code)
	}

	// At a terminal.
	master, tty := openPTY(t)
	cmd := exec.Command(binPath, "--data-dir", t.TempDir(), "import", "--discover")
	cmd.Env = append(os.Environ(), env...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, tty
	if err := cmd.Run(); err != nil {
		t.Fatalf("import --discover at a terminal: %v", err)
	}
	tty.Close()
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(master); done <- b }()
	var screen []byte
	select {
	case screen = <-done:
	case <-time.After(10 * time.Second):
		master.Close()
		screen = <-done
	}
	if !strings.Contains(string(screen), "discover: ") || !strings.Contains(string(screen), "/5") {
		t.Fatalf("no progress line on the terminal: %q", screen)
	}
	if !strings.Contains(stdout.String(), "claude-code") {
		t.Fatalf("summary: %s", stdout.String())
	}
}

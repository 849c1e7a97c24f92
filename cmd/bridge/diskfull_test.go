package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// smallDisk mounts a tmpfs of size bytes and returns its folder. Disk-full
// tests need a real file system that fills up; mounting one needs root
// (CAP_SYS_ADMIN), as CI runs.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("this test mounts a small tmpfs to fill it and needs root (CAP_SYS_ADMIN): mount: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillDisk writes a file into dir until the disk is full and returns its
// path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	for {
		if _, err := f.Write(block[:512]); err != nil {
			return p
		}
	}
}

// TestDiskFullIsNamed: on a full disk, a session/import, a prompt and the
// CLI's import fail with an error that says "disk full" (data.code
// unavailable), never a harness's name, "internal error" or a bare "disk
// I/O error"; nothing of the failed writes is kept, and once space is
// freed the session goes on.
func TestDiskFullIsNamed(t *testing.T) {
	disk := smallDisk(t, 6<<20)
	data := filepath.Join(disk, "data")
	doc := manyTermsExport(t, 3000) // about 2 MB, outside the small disk
	c := startBridge(t, data)
	c.initialize(nil)
	sid := createFake(t, c)
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say before the disk filled")})
	filler := fillDisk(t, disk)

	named := func(what string, e *wireError) {
		t.Helper()
		if e == nil {
			t.Fatalf("%s succeeded on a full disk", what)
		}
		if !strings.Contains(e.Message, "disk full") || e.DataCode() != "unavailable" ||
			strings.Contains(e.Message, "fake") || strings.Contains(e.Message, "internal error") {
			t.Fatalf("%s: error %d %q (data %s); want \"disk full\", code unavailable", what, e.Code, e.Message, e.Data)
		}
	}
	named("session/import", rpctest.ErrorOf(c.SessionImport(t.Context(), schema.SessionImportParams{Harness: "bridge", Path: doc})))
	big := "say " + strings.Repeat("a long prompt that does not fit ", 40_000)
	named("session/prompt", rpctest.ErrorOf(c.SessionPrompt(t.Context(), schema.SessionPromptParams{SessionID: sid, Content: prompt(big)})))
	list := rpctest.Must(c.Client, c.SessionList, schema.SessionListParams{})
	if len(list.Items) != 1 || list.Items[0].SessionID != sid {
		t.Fatalf("sessions on the full disk: %+v; want only %s (the import kept nothing)", list.Items, sid)
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit %d", code)
	}
	_, stderr, code := runCLI(t, nil, "--data-dir", data, "import", "--harness", "bridge", doc)
	if code != 1 || !strings.Contains(stderr, "disk full") {
		t.Fatalf("bridge import on a full disk: exit %d: %s", code, stderr)
	}

	// Space again: the record is whole and the session goes on.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c = startBridge(t, data)
	c.initialize(nil)
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say after the disk was freed")})
	hist := rpctest.Must(c.Client, c.SessionHistory, schema.SessionHistoryParams{SessionID: sid})
	var texts []string
	for _, e := range hist.Entries {
		if e.Kind == "assistant.message" {
			texts = append(texts, string(e.Payload))
		}
	}
	if j := strings.Join(texts, "\n"); !strings.Contains(j, "before the disk filled") || !strings.Contains(j, "after the disk was freed") || strings.Contains(j, "does not fit") {
		t.Fatalf("the session after the disk was freed: %s", j)
	}
}

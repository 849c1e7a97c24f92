package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMaxEntryBytesIsConfigurable: config.json's maxEntryBytes lowers the
// per-entry limit; an import holding a larger entry is refused naming it.
func TestMaxEntryBytesIsConfigurable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"maxEntryBytes": 200}`), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join("..", "..", "testdata", "claude-code", "transcript-with-compact-boundary.recorded.jsonl")
	out, stderr, code := runWatched(t, nil, "--data-dir", dir, "import", "--harness", "claude-code", good, "--json")
	if code == 0 || !strings.Contains(out+stderr, "limit of 200 bytes per entry (maxEntryBytes)") {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	if n := sessionCount(t, dir); n != 0 {
		t.Fatalf("a refused import recorded %d sessions", n)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"maxEntryBytes": 100000000}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runWatched(t, nil, "--data-dir", dir, "import", "--harness", "claude-code", good); code != 0 {
		t.Fatalf("with a larger limit: exit %d: %s", code, stderr)
	}
}

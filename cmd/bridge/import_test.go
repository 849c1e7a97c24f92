package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportTwice: `bridge import` brings a recorded transcript of each
// harness into the record with its compactions, and importing the same file
// again adds nothing. On both stores.
func TestImportTwice(t *testing.T) { eachStore(t, testImportTwice) }

func testImportTwice(t *testing.T, st storeKind) {
	root := filepath.Join("..", "..", "testdata")
	for _, c := range []struct {
		harness, file string
	}{
		{"claude-code", "claude-code/transcript-with-compact-boundary.recorded.jsonl"},
		{"codex", "codex/rollout-manual-compact.recorded.jsonl"},
		{"opencode", "opencode/export-after-summarize.recorded.json"},
	} {
		t.Run(c.harness, func(t *testing.T) {
			dir := st.dataDir(t, nil)
			path := filepath.Join(root, c.file)
			var first, second struct {
				SessionID        string `json:"sessionId"`
				Entries          int    `json:"entries"`
				ContextCompacted int    `json:"contextCompacted"`
			}
			for i, out := range []any{&first, &second} {
				stdout, stderr, code := runCLI(t, nil, "--data-dir", dir, "import", "--harness", c.harness, path, "--json")
				if code != 0 {
					t.Fatalf("import %d: exit %d: %s", i+1, code, stderr)
				}
				if err := json.Unmarshal([]byte(stdout), out); err != nil {
					t.Fatalf("import %d: %v: %s", i+1, err, stdout)
				}
			}
			if first.Entries == 0 || first.ContextCompacted < 1 {
				t.Fatalf("first import %+v: want entries and at least one context.compacted", first)
			}
			if second.SessionID != first.SessionID || second.Entries != 0 {
				t.Fatalf("second import %+v: want the same session and nothing added", second)
			}
			hist, stderr, code := runCLI(t, nil, "--data-dir", dir, "history", first.SessionID, "--max", "100000", "--json")
			if code != 0 || !strings.Contains(hist, `"context.compacted"`) {
				t.Fatalf("history after import: exit %d %s", code, stderr)
			}
		})
	}
	out, stderr, code := runCLI(t, nil, "--data-dir", st.dataDir(t, nil), "import", "--harness", "claude-code", filepath.Join(root, "nope.jsonl"), "--json")
	if ec, _ := jsonError(t, out); code != 1 || ec != "not_found" {
		t.Fatalf("missing file: exit %d, code %q, %q", code, ec, stderr)
	}
}

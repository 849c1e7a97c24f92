package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// onePixelPNG is a 1×1 PNG.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// TestExportImportRoundTrip: a session with an image, tool calls, a
// harness compaction and Bridge checkpoints is exported as JSON, imported
// into another data directory with --harness bridge, and exported again:
// the two documents are byte for byte the same, and so are the Markdown
// renderings. Importing the document again adds nothing. On both stores.
func TestExportImportRoundTrip(t *testing.T) { eachStore(t, testExportImportRoundTrip) }

func testExportImportRoundTrip(t *testing.T, st storeKind) {
	src, dst := st.dataDir(t, nil), st.dataDir(t, nil)
	c := startBridge(t, src)
	c.initialize(nil)
	sid := createFake(t, c)
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: []schema.Content{
		{Type: "text", Text: "say what a picture\ntool ls /tmp"},
		{Type: "image", MediaType: "image/png", Data: onePixelPNG},
	}})
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say working on it\ncompact manual 9000 900")})
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt(`say more work
next json {"summary": "the picture was looked at; next, the tests", "decisions": ["keep the picture"]}`)})
	cp := rpctest.Must(c.Client, c.SessionCheckpoint, schema.SessionCheckpointParams{SessionID: sid, Reason: "manual"})
	if cp.EntryID == "" {
		t.Fatal("no checkpoint")
	}
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say after the checkpoint")})
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit %d", code)
	}

	doc := filepath.Join(t.TempDir(), "session.json")
	if _, stderr, code := runCLI(t, nil, "--data-dir", src, "export", sid, "--format", "json", "--output", doc); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	first, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Entries []struct {
			Kind string `json:"kind"`
		} `json:"entries"`
		Attachments []struct {
			SHA256 string `json:"sha256"`
			Data   string `json:"data"`
		} `json:"attachments"`
		Audit []json.RawMessage `json:"audit"`
	}
	if err := json.Unmarshal(first, &parsed); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range parsed.Entries {
		kinds[e.Kind]++
	}
	for _, k := range []string{"user.message", "tool.started", "tool.completed", "context.compacted", "checkpoint"} {
		if kinds[k] == 0 {
			t.Fatalf("the session has no %s entry to carry over: %v", k, kinds)
		}
	}
	if len(parsed.Attachments) != 1 || parsed.Attachments[0].Data != onePixelPNG {
		t.Fatalf("attachments %+v, want the one image inline", parsed.Attachments)
	}
	if len(parsed.Audit) == 0 {
		t.Fatalf("no audit records (the checkpoint writes some)")
	}

	out, stderr, code := runCLI(t, nil, "--data-dir", dst, "import", "--harness", "bridge", doc, "--json")
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	var imp struct {
		SessionID string `json:"sessionId"`
		Entries   int    `json:"entries"`
	}
	_ = json.Unmarshal([]byte(out), &imp)
	if imp.SessionID != sid || imp.Entries != len(parsed.Entries) {
		t.Fatalf("import = %s, want session %s with %d entries", out, sid, len(parsed.Entries))
	}
	second, stderr, code := runCLI(t, nil, "--data-dir", dst, "export", sid, "--format", "json")
	if code != 0 {
		t.Fatalf("re-export: exit %d: %s", code, stderr)
	}
	if second != string(first) {
		t.Fatalf("the re-exported record differs:\n--- first\n%s\n--- second\n%s", first, second)
	}
	mdSrc, _, _ := runCLI(t, nil, "--data-dir", src, "export", sid)
	mdDst, _, _ := runCLI(t, nil, "--data-dir", dst, "export", sid)
	if mdSrc != mdDst || !strings.Contains(mdSrc, "**Context compacted**") || !strings.Contains(mdSrc, "**Checkpoint**") ||
		!strings.Contains(mdSrc, "<details><summary>Tool: ls") || !strings.Contains(mdSrc, "*Image 1: image/png") || strings.Contains(mdSrc, "(attachments/") {
		t.Fatalf("markdown differs or lacks boundaries/tools/images:\n%s\n---\n%s", mdSrc, mdDst)
	}
	if n := attachmentCount(t, dst); n != 1 {
		t.Fatalf("image not restored: %d attachments in the record", n)
	}
	// Again: nothing new.
	out, _, code = runCLI(t, nil, "--data-dir", dst, "import", "--harness", "bridge", doc, "--json")
	if code != 0 || !strings.Contains(out, `"entries": 0`) {
		t.Fatalf("second import: exit %d %s", code, out)
	}
	// The restored session is searchable.
	hits, _, _ := runCLI(t, nil, "--data-dir", dst, "search", "picture", "--json")
	if !strings.Contains(hits, sid) {
		t.Fatalf("search after import: %s", hits)
	}
	// A tampered image is refused, and nothing is written.
	bad := strings.Replace(string(first), onePixelPNG, "aGVsbG8=", 1)
	badPath := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(badPath, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	other := st.dataDir(t, nil)
	_, stderr, code = runCLI(t, nil, "--data-dir", other, "import", "--harness", "bridge", badPath)
	if code != 1 || !strings.Contains(stderr, "does not match") {
		t.Fatalf("tampered import: exit %d %s", code, stderr)
	}
	if list, _, _ := runCLI(t, nil, "--data-dir", other, "sessions", "--json"); strings.Contains(list, sid) {
		t.Fatalf("a refused import left a session: %s", list)
	}
	if n := attachmentCount(t, other); n != 0 {
		t.Fatalf("a refused import left %d images", n)
	}
}

// attachmentCount is how many images the record in dataDir keeps.
func attachmentCount(t *testing.T, dataDir string) int {
	t.Helper()
	return queryInt(t, openRecord(t, dataDir), `SELECT count(*) FROM attachments`)
}

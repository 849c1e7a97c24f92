package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// importFixtures imports one recorded transcript of each of the three
// harness formats into dir with `bridge import` and returns their sessions.
func importFixtures(t *testing.T, dir string) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..", "testdata")
	sessions := map[string]string{}
	for _, c := range []struct{ harness, file string }{
		{"claude-code", "claude-code/transcript-with-compact-boundary.recorded.jsonl"},
		{"codex", "codex/rollout-tools.recorded.jsonl"},
		{"opencode", "opencode/export-after-summarize.recorded.json"},
	} {
		stdout, stderr, code := runCLI(t, nil, "--data-dir", dir, "import", "--harness", c.harness, filepath.Join(root, c.file), "--json")
		if code != 0 {
			t.Fatalf("import %s: exit %d: %s", c.file, code, stderr)
		}
		var out struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatal(err)
		}
		sessions[c.harness] = out.SessionID
	}
	return sessions
}

// TestSearchFindsEachHarnessFormat: after importing a Claude Code
// transcript, a Codex rollout and an OpenCode export, `bridge search` finds
// a word that only one of them holds, in that harness's session, with the
// word marked in the snippet.
func TestSearchFindsEachHarnessFormat(t *testing.T) {
	dir := t.TempDir()
	sessions := importFixtures(t, dir)
	for word, harness := range map[string]string{"resume": "claude-code", "patched": "codex", "tested": "opencode"} {
		stdout, stderr, code := runCLI(t, nil, "--data-dir", dir, "search", word, "--json")
		if code != 0 {
			t.Fatalf("search %s: exit %d: %s", word, code, stderr)
		}
		var res schema.SessionSearchResult
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		if len(res.Hits) != 1 {
			t.Fatalf("search %s: %d hits, want 1: %s", word, len(res.Hits), stdout)
		}
		h := res.Hits[0]
		if h.Harness != harness || h.SessionID != sessions[harness] || h.EntryID == "" {
			t.Fatalf("search %s: hit %+v, want session %s of %s", word, h, sessions[harness], harness)
		}
		if len(h.Highlights) != 1 || string([]rune(h.Snippet)[h.Highlights[0].Start:h.Highlights[0].End]) != word {
			t.Fatalf("search %s: snippet %q highlights %+v", word, h.Snippet, h.Highlights)
		}
		// The plain output names the session and marks the word.
		text, _, code := runCLI(t, nil, "--data-dir", dir, "search", word, "--harness", harness)
		if code != 0 || !strings.Contains(text, sessions[harness]) || !strings.Contains(text, "["+word+"]") {
			t.Fatalf("search %s (text): exit %d\n%s", word, code, text)
		}
		// Another harness's filter hides it.
		other, _, _ := runCLI(t, nil, "--data-dir", dir, "search", word, "--harness", "fake", "--json")
		if !strings.Contains(other, `"hits": []`) {
			t.Fatalf("search %s --harness fake: %s", word, other)
		}
	}
	_, stderr, code := runCLI(t, nil, "--data-dir", dir, "search", `"unbalanced`)
	if code != 1 || !strings.Contains(stderr, "not valid") || strings.Contains(stderr, "SQL") {
		t.Fatalf("bad query: exit %d, %q", code, stderr)
	}
}

// dbErrorText is how a database's own error reads (SQLite's and FTS5's,
// PostgreSQL's), which a refused query must not show. PostgreSQL's search
// may name the SQLite syntax it does not take: that is a message for the
// user, not a leak.
var dbErrorText = regexp.MustCompile(`SQL logic error|fts5|SQLSTATE|syntax error at|tsquery`)

// TestSearchOverRPC: session/search answers ranked hits, and a query the
// store cannot parse is -32602 naming the query field, not an SQL error;
// on both stores.
func TestSearchOverRPC(t *testing.T) { eachStore(t, testSearchOverRPC) }

func testSearchOverRPC(t *testing.T, st storeKind) {
	dir := st.dataDir(t, nil)
	sessions := importFixtures(t, dir)
	c := startBridge(t, dir)
	c.initialize(nil)
	res := rpctest.Must(c.Client, c.SessionSearch, schema.SessionSearchParams{Query: "hello", Limit: 2})
	if len(res.Hits) != 2 || res.NextCursor == "" {
		t.Fatalf("first page: %+v", res)
	}
	rest := rpctest.Must(c.Client, c.SessionSearch, schema.SessionSearchParams{Query: "hello", Cursor: res.NextCursor, Limit: 200})
	if len(rest.Hits) == 0 {
		t.Fatalf("second page empty")
	}
	one := rpctest.Must(c.Client, c.SessionSearch, schema.SessionSearchParams{Query: "patched", SessionID: sessions["codex"]})
	if len(one.Hits) != 1 || one.Hits[0].Kind != "assistant.message" {
		t.Fatalf("filtered: %+v", one)
	}
	for _, q := range []string{`"open`, `hello AND`, `nosuch: x`, ""} {
		e := rpctest.ErrorOf(c.SessionSearch(t.Context(), schema.SessionSearchParams{Query: q}))
		if e == nil || e.Code != -32602 || dbErrorText.MatchString(e.Message) {
			t.Fatalf("query %q: %+v, want -32602 without a database's own error text", q, e)
		}
		var d struct {
			Field string `json:"field"`
		}
		_ = json.Unmarshal(e.Data, &d)
		if d.Field != "query" {
			t.Fatalf("query %q: data %s, want field query", q, e.Data)
		}
	}
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

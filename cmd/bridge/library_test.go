package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
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

// searchHit is one hit of `bridge search`'s text output: its first line,
// its snippet, and the command it prints to open it.
var searchHit = regexp.MustCompile(`(?m)^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}  .*)\n    (.*)\n    bridge history (\S+) --around (\S+)  # seq (\d+)$`)

// TestCLISearchHitOpensInHistory: `bridge search` prints, for each hit,
// the command that opens it (`bridge history SESSION --around ENTRY`, the
// ids --json gives, in the same order); running that command through the
// built binary shows the page with the hit marked. The text output shows
// no control characters of a title or snippet (nor does bridge sessions),
// and --json is unchanged by the text form.
func TestCLISearchHitOpensInHistory(t *testing.T) {
	dir, long, _, _, _ := historyDataDir(t)
	sid := long[0].SessionID

	text, stderr, code := runCLI(t, nil, "--data-dir", dir, "search", "a50")
	if code != 0 || stderr != "" {
		t.Fatalf("search a50: exit %d, stderr %q", code, stderr)
	}
	hits := searchHit.FindAllStringSubmatch(text, -1)
	if len(hits) != 1 || strings.Count(text, "\n") != 3 {
		t.Fatalf("search a50: want one hit of three lines, got\n%s", text)
	}
	h := hits[0]
	if h[3] != sid || !strings.Contains(h[1], "fake  assistant.message  long") || h[2] != "[a50]" {
		t.Fatalf("search a50: hit %q, want session %s (fake, long) and the snippet [a50]", h[0], sid)
	}
	seqs, marked, texts, _, _ := historyPage(t, dir, h[3], "--around", h[4], "--max", "6")
	if at := slices.Index(seqs, marked); at < 0 || texts[at] != "a50" || h[5] != strconv.FormatInt(marked, 10) {
		t.Fatalf("history --around the printed entry: seqs %v, marked %d (the hit says seq %s), texts %q", seqs, marked, h[5], texts)
	}

	// Many hits: each command opens its own hit, in --json's order.
	text, _, _ = runCLI(t, nil, "--data-dir", dir, "search", "u1*", "--limit", "5")
	hits = searchHit.FindAllStringSubmatch(text, -1)
	stdout, _, _ := runCLI(t, nil, "--data-dir", dir, "search", "u1*", "--limit", "5", "--json")
	var res schema.SessionSearchResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 || len(res.Hits) != 5 || res.NextCursor == "" {
		t.Fatalf("search u1* --limit 5: %d hits in text, %d in --json (cursor %q):\n%s", len(hits), len(res.Hits), res.NextCursor, text)
	}
	if !strings.HasSuffix(text, "… more hits: the same search with --cursor "+res.NextCursor+"\n") {
		t.Fatalf("search u1* --limit 5: the last line does not give the next page's cursor:\n%s", text)
	}
	for i, h := range hits {
		if h[3] != res.Hits[i].SessionID || h[4] != res.Hits[i].EntryID || h[5] != strconv.FormatInt(res.Hits[i].Seq, 10) {
			t.Fatalf("hit %d: text %q, --json %+v", i, h[0], res.Hits[i])
		}
		_, marked, texts, _, _ := historyPage(t, dir, h[3], "--around", h[4], "--max", "4")
		if strings.Trim(h[2], "[]") == "" || !slices.Contains(texts, strings.Trim(h[2], "[]")) || h[5] != strconv.FormatInt(marked, 10) {
			t.Fatalf("hit %d (%s): history --around marks seq %d, texts %q", i, h[2], marked, texts)
		}
	}

	// A title and text with a terminal's escapes print as spaces.
	ctx := t.Context()
	db, err := storage.Open(ctx, filepath.Join(dir, DatabaseFile), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: work, Title: "evil\x1b[2J\u009b31m title"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, s.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(core.UserMessagePayload{Text: "zebra\x1b]0;pwned\x07\u009b2J stripes"})}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	text, _, code = runCLI(t, nil, "--data-dir", dir, "search", "zebra")
	if hits := searchHit.FindAllStringSubmatch(text, -1); code != 0 || len(hits) != 1 || hits[0][3] != s.ID {
		t.Fatalf("search zebra: exit %d\n%q", code, text)
	}
	if strings.ContainsAny(text, "\x1b\x07\u009b") {
		t.Fatalf("search zebra prints control characters: %q", text)
	}
	if list, _, _ := runCLI(t, nil, "--data-dir", dir, "sessions"); !strings.Contains(list, "evil [2J 31m title") || strings.ContainsAny(list, "\x1b\u009b") {
		t.Fatalf("bridge sessions prints a title's control characters: %q", list)
	}

	// A --session that is no session is not "no matches".
	_, stderr, code = runCLI(t, nil, "--data-dir", dir, "search", "zebra", "--session", "s_nosuch")
	if code != 1 || !strings.Contains(stderr, `session "s_nosuch" not found`) {
		t.Fatalf("search --session s_nosuch: exit %d, %q", code, stderr)
	}
	if text, _, code = runCLI(t, nil, "--data-dir", dir, "search", "nothing-like-it", "--session", s.ID); code != 0 || text != "no matches\n" {
		t.Fatalf("search in a session without a match: exit %d, %q", code, text)
	}

	// --cwd . is the folder the command runs in.
	for _, c := range []struct {
		in   string
		hits int
	}{{work, 1}, {filepath.Dir(work), 0}} {
		cmd := exec.Command(binPath, "--data-dir", dir, "search", "zebra", "--cwd", ".", "--json")
		cmd.Dir = c.in
		out, err := cmd.Output()
		var res schema.SessionSearchResult
		if err != nil || json.Unmarshal(out, &res) != nil || len(res.Hits) != c.hits {
			t.Fatalf("search zebra --cwd . in %s: %v, %d hits (want %d): %s", c.in, err, len(res.Hits), c.hits, out)
		}
	}
}

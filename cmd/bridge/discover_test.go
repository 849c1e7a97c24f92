package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/bridge-dev/bridge/schema"
)

// harnessHomes lays out, under root, the folders Claude Code, Codex and
// DeepSeek Harness keep their transcripts in, holding recorded transcripts
// from testdata, and returns the environment that points the harnesses
// there (HOME included, so nothing of the real home is found).
func harnessHomes(t *testing.T, root string) (env []string, claudeFile string) {
	t.Helper()
	td := filepath.Join("..", "..", "testdata")
	copyTo := func(src, dst string, compress bool) {
		b, err := os.ReadFile(filepath.Join(td, src))
		if err != nil {
			t.Fatal(err)
		}
		if compress {
			enc, err := zstd.NewWriter(nil)
			if err != nil {
				t.Fatal(err)
			}
			b = enc.EncodeAll(b, nil)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	claude := filepath.Join(root, "claude")
	claudeFile = filepath.Join(claude, "projects", "-home-user-project", "a3edcc62-5436-4b34-8ea1-4bd239b73459.jsonl")
	copyTo("claude-code/transcript-with-compact-boundary.recorded.jsonl", claudeFile, false)
	codexHome := filepath.Join(root, "codex")
	copyTo("codex/rollout-tools.recorded.jsonl", filepath.Join(codexHome, "sessions", "2026", "11", "30",
		"rollout-2026-11-30T04-17-28-01a22aac-0d41-7341-9058-ec3336410956.jsonl"), false)
	copyTo("codex/rollout-manual-compact.recorded.jsonl", filepath.Join(codexHome, "archived_sessions",
		"rollout-2026-11-29T10-00-00-archived.jsonl"), false)
	dshHome := filepath.Join(root, "dsh")
	copyTo("dsh/headless-turn.session.jsonl", filepath.Join(dshHome, "sessions", "--home-user-project--",
		"session-b8eff3b1-12cd-487d-952f-9908f527aadb", "session.jsonl.zstd"), true)
	// Files that are not transcripts are not picked up.
	copyTo("codex/README.md", filepath.Join(codexHome, "sessions", "2026", "11", "30", "notes.md"), false)
	if err := os.WriteFile(filepath.Join(claude, "projects", "-home-user-project", "not-a-transcript.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	openCodeDB(t, filepath.Join(home, ".local", "share", "opencode", "opencode.db"),
		filepath.Join(td, "opencode", "export-after-summarize.recorded.json"))
	return []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + claude, "CODEX_HOME=" + codexHome, "DSH_HOME=" + dshHome,
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share")}, claudeFile
}

func discoverJSON(t *testing.T, env []string, dir string) schema.SessionImportResult {
	t.Helper()
	stdout, stderr, code := runCLI(t, env, "--data-dir", dir, "import", "--discover", "--json")
	if code != 0 {
		t.Fatalf("import --discover: exit %d: %s", code, stderr)
	}
	var res schema.SessionImportResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	return res
}

func byHarness(res schema.SessionImportResult) map[string]schema.DiscoverSummary {
	out := map[string]schema.DiscoverSummary{}
	for _, d := range res.Discovered {
		out[d.Harness] = d
	}
	return out
}

// importedEntries is what a plain `bridge import` of path adds to a fresh
// data directory.
func importedEntries(t *testing.T, harness, path string) int {
	t.Helper()
	stdout, stderr, code := runCLI(t, nil, "--data-dir", t.TempDir(), "import", "--harness", harness, path, "--json")
	if code != 0 {
		t.Fatalf("import %s: exit %d: %s", path, code, stderr)
	}
	var r schema.SessionImportResult
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	return r.Entries
}

// TestDiscoverImportsOnceThenOnlyWhatGrew: discovery over folders laid out
// like each harness's home imports every transcript once; a second run
// imports nothing; after lines are appended to one transcript, a third run
// adds exactly the entries those lines hold. The harnesses' files are not
// changed by any of it.
func TestDiscoverImportsOnceThenOnlyWhatGrew(t *testing.T) {
	root := t.TempDir()
	env, claudeFile := harnessHomes(t, root)
	dir := t.TempDir()
	before := snapshot(t, root)

	first := byHarness(discoverJSON(t, env, dir))
	want := map[string]struct{ files, entries int }{
		"claude-code": {1, importedEntries(t, "claude-code", claudeFile)},
		"codex": {2, importedEntries(t, "codex", filepath.Join("..", "..", "testdata", "codex", "rollout-tools.recorded.jsonl")) +
			importedEntries(t, "codex", filepath.Join("..", "..", "testdata", "codex", "rollout-manual-compact.recorded.jsonl"))},
		"dsh":      {1, -1},
		"opencode": {1, importedEntries(t, "opencode", filepath.Join("..", "..", "testdata", "opencode", "export-after-summarize.recorded.json"))},
	}
	for h, w := range want {
		d := first[h]
		if d.Files != w.files || d.Imported != w.files || len(d.Failed) != 0 || d.Entries == 0 || (w.entries >= 0 && d.Entries != w.entries) {
			t.Errorf("first discovery, %s: %+v; want %d files imported with %d entries", h, d, w.files, w.entries)
		}
	}

	second := byHarness(discoverJSON(t, env, dir))
	for h, w := range want {
		if d := second[h]; d.Unchanged != w.files || d.Imported != 0 || d.Entries != 0 {
			t.Errorf("second discovery, %s: %+v; want every transcript unchanged", h, d)
		}
	}

	if after := snapshot(t, root); after != before {
		t.Fatalf("discovery changed the harnesses' files")
	}

	// The session goes on: two more lines in the Claude Code transcript.
	orig, err := os.ReadFile(claudeFile)
	if err != nil {
		t.Fatal(err)
	}
	var userLine, assistantLine string
	for _, l := range strings.Split(string(orig), "\n") {
		if strings.Contains(l, `"uuid": "dc3a413c-e4b4-4d3d-9f9d-c4f2c07ddad0"`) {
			userLine = l
		}
		if strings.Contains(l, `"uuid": "c7136040-6fe1-46df-b1b0-d1685c38d58a"`) {
			assistantLine = l
		}
	}
	if userLine == "" || assistantLine == "" {
		t.Fatal("template lines not found in the transcript")
	}
	userLine = strings.NewReplacer(`"uuid": "dc3a413c-e4b4-4d3d-9f9d-c4f2c07ddad0"`, `"uuid": "11111111-0000-4000-8000-000000000001"`,
		`"after resume"`, `"appended quetzal question"`, `"parentUuid": "992d8158-8d8c-410f-8e98-f96820b0249b"`,
		`"parentUuid": "c7136040-6fe1-46df-b1b0-d1685c38d58a"`).Replace(userLine)
	assistantLine = strings.NewReplacer(`"uuid": "c7136040-6fe1-46df-b1b0-d1685c38d58a"`, `"uuid": "11111111-0000-4000-8000-000000000002"`,
		`"msg_mock_5"`, `"msg_mock_6"`, `<summary>Mock summary #5</summary>`, `appended quetzal answer`,
		`"parentUuid": "4d2f90e0-e54e-4081-99e2-0c7548274fd6"`, `"parentUuid": "11111111-0000-4000-8000-000000000001"`).Replace(assistantLine)
	f, err := os.OpenFile(claudeFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(userLine + "\n" + assistantLine + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	grown := importedEntries(t, "claude-code", claudeFile)
	added := grown - want["claude-code"].entries
	if added < 2 {
		t.Fatalf("the appended lines map to %d entries; want at least the two messages", added)
	}
	before = snapshot(t, root)

	third := byHarness(discoverJSON(t, env, dir))
	if d := third["claude-code"]; d.Imported != 1 || d.Entries != added {
		t.Fatalf("third discovery, claude-code: %+v; want exactly the %d entries the appended lines hold", d, added)
	}
	for _, h := range []string{"codex", "dsh", "opencode"} {
		if d := third[h]; d.Unchanged != want[h].files || d.Entries != 0 {
			t.Errorf("third discovery, %s: %+v; want unchanged", h, d)
		}
	}
	hits, _, _ := runCLI(t, nil, "--data-dir", dir, "search", "quetzal", "--json")
	var res schema.SessionSearchResult
	_ = json.Unmarshal([]byte(hits), &res)
	if len(res.Hits) != 2 {
		t.Fatalf("search for the appended words: %s", hits)
	}
	if after := snapshot(t, root); after != before {
		t.Fatalf("discovery changed the harnesses' files")
	}
	// The text form: one line per harness.
	text, stderr, code := runCLI(t, env, "--data-dir", dir, "import", "--discover")
	if code != 0 || !strings.Contains(text, "claude-code") || !strings.Contains(text, "1 unchanged") {
		t.Fatalf("text summary: exit %d\n%s\n%s", code, text, stderr)
	}
}

// openCodeDB writes an OpenCode database (its session, message and part
// tables, as the pinned OpenCode creates them) holding the session of an
// `opencode export` document.
func openCodeDB(t *testing.T, path, export string) {
	t.Helper()
	var doc struct {
		Info     map[string]any `json:"info"`
		Messages []struct {
			Info  map[string]any   `json:"info"`
			Parts []map[string]any `json:"parts"`
		} `json:"messages"`
	}
	b, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL, `parent_id` text, `slug` text NOT NULL, `directory` text NOT NULL, `title` text NOT NULL, `version` text NOT NULL, `share_url` text, `summary_additions` integer, `summary_deletions` integer, `summary_files` integer, `summary_diffs` text, `revert` text, `permission` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `time_compacting` integer, `time_archived` integer)")
	exec("CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL)")
	exec("CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL)")
	sid, _ := doc.Info["id"].(string)
	exec("INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES (?, 'global', 'slug', ?, ?, '1.18.33', 1, 1)",
		sid, doc.Info["directory"], doc.Info["title"])
	strip := func(m map[string]any, keys ...string) string {
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		for _, k := range keys {
			delete(c, k)
		}
		out, _ := json.Marshal(c)
		return string(out)
	}
	n := 0
	for _, m := range doc.Messages {
		n++
		mid, _ := m.Info["id"].(string)
		exec("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)", mid, sid, n, n, strip(m.Info, "id", "sessionID"))
		for _, p := range m.Parts {
			n++
			pid, _ := p["id"].(string)
			exec("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)", pid, mid, sid, n, n, strip(p, "id", "sessionID", "messageID"))
		}
	}
}

// snapshot describes every file under root (path, size, mode, time).
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + info.Mode().String() + " " + info.ModTime().String())
		if !info.IsDir() {
			b.WriteString(" " + strconv.FormatInt(info.Size(), 10))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

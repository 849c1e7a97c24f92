package main

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/schema"
)

// recordedDay is the day every recorded transcript in testdata was written
// (2026-11-29/30 UTC); nothing of them happened on or after dayAfter.
var dayAfter = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

type exportedTimes struct {
	Session struct {
		SessionID string    `json:"sessionId"`
		Harness   string    `json:"harness"`
		CreatedAt time.Time `json:"createdAt"`
		UpdatedAt time.Time `json:"updatedAt"`
	} `json:"session"`
	Entries []struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"createdAt"`
	} `json:"entries"`
}

func exportTimes(t *testing.T, dir, sid string) exportedTimes {
	t.Helper()
	out, stderr, code := runCLI(t, nil, "--data-dir", dir, "export", sid, "--format", "json")
	if code != 0 {
		t.Fatalf("export %s: exit %d: %s", sid, code, stderr)
	}
	var x exportedTimes
	if err := json.Unmarshal([]byte(out), &x); err != nil {
		t.Fatal(err)
	}
	return x
}

// checkHarnessTimes: every entry of the session is dated on the day its
// transcript was recorded (not at the import), and the session is dated by
// its entries (created at the first, updated at the newest).
func checkHarnessTimes(t *testing.T, dir, sid string) exportedTimes {
	t.Helper()
	x := exportTimes(t, dir, sid)
	if len(x.Entries) == 0 {
		t.Fatalf("%s (%s): no entries", sid, x.Session.Harness)
	}
	var newest time.Time
	for _, e := range x.Entries {
		if e.CreatedAt.Before(dayAfter.Add(-48*time.Hour)) || !e.CreatedAt.Before(dayAfter) {
			t.Fatalf("%s (%s): entry %s at %s, not when the harness wrote it", sid, x.Session.Harness, e.ID, e.CreatedAt)
		}
		if e.CreatedAt.After(newest) {
			newest = e.CreatedAt
		}
	}
	if !x.Session.UpdatedAt.Equal(newest) || x.Session.CreatedAt.After(x.Entries[0].CreatedAt) {
		t.Fatalf("%s (%s): session created %s, updated %s; entries from %s to %s", sid, x.Session.Harness,
			x.Session.CreatedAt, x.Session.UpdatedAt, x.Entries[0].CreatedAt, newest)
	}
	return x
}

// TestImportKeepsTheHarnessTimes: recorded transcripts of every harness
// (Claude Code, two Codex rollouts, DeepSeek Harness and OpenCode's
// database through discovery; an OpenCode export and a Bridge export
// through `bridge import`) are recorded at the times their harness wrote
// them: each entry, the session's dates, `search --until` and `--since`,
// the Markdown export and `history`. A record an older Bridge imported (at
// the moment of import) gets the transcripts' times back from the next
// import or discovery of the same files.
func TestImportKeepsTheHarnessTimes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env, claudeFile := harnessHomes(t, t.TempDir())
	discoverJSON(t, env, dir)
	// The OpenCode export's importer, in a record of its own (the same
	// session as OpenCode's database holds).
	td, exportDir := filepath.Join("..", "..", "testdata"), t.TempDir()
	stdout, stderr, code := runCLI(t, nil, "--data-dir", exportDir, "import", "--harness", "opencode",
		filepath.Join(td, "opencode", "export-after-summarize.recorded.json"), "--json")
	if code != 0 {
		t.Fatalf("import the opencode export: exit %d: %s", code, stderr)
	}
	var exported schema.SessionImportResult
	if err := json.Unmarshal([]byte(stdout), &exported); err != nil {
		t.Fatal(err)
	}
	checkHarnessTimes(t, exportDir, exported.SessionID)

	var list schema.SessionListResult
	out, stderr, code := runCLI(t, nil, "--data-dir", dir, "sessions", "--all", "--json")
	if code != 0 {
		t.Fatalf("sessions: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	harnesses := map[string]int{}
	for _, s := range list.Items {
		harnesses[s.Harness]++
		x := checkHarnessTimes(t, dir, s.SessionID)
		md, _, code := runCLI(t, nil, "--data-dir", dir, "export", s.SessionID)
		if day := x.Session.CreatedAt.Format("2006-01-02"); code != 0 || !strings.Contains(md, "- created: "+day) {
			t.Fatalf("%s: the Markdown export does not date it %s:\n%.400s", s.Harness, day, md)
		}
		hist, _, _ := runCLI(t, nil, "--data-dir", dir, "history", s.SessionID)
		if !strings.Contains(hist, x.Entries[0].CreatedAt.Local().Format("2006-01-02")) {
			t.Fatalf("%s: history does not show the entries' dates:\n%.400s", s.Harness, hist)
		}
	}
	for h, n := range map[string]int{"claude-code": 1, "codex": 2, "dsh": 1, "opencode": 1} {
		if harnesses[h] < n {
			t.Fatalf("sessions by harness %v, want at least %d of %s", harnesses, n, h)
		}
	}
	// The list is newest first by the harnesses' times.
	for i := 1; i < len(list.Items); i++ {
		if list.Items[i].UpdatedAt.After(list.Items[i-1].UpdatedAt) || list.Items[i-1].UpdatedAt.After(dayAfter) {
			t.Fatalf("the list is not ordered by the transcripts' times: %+v", list.Items)
		}
	}

	for word, harness := range map[string]string{"resume": "claude-code", "patched": "codex", "tested": "opencode", "hello": "dsh"} {
		var before, after schema.SessionSearchResult
		for _, c := range []struct {
			flag string
			out  *schema.SessionSearchResult
		}{{"--until", &before}, {"--since", &after}} {
			out, stderr, code := runCLI(t, nil, "--data-dir", dir, "search", word, "--harness", harness, c.flag, "2026-12-01", "--json")
			if code != 0 {
				t.Fatalf("search %s %s: exit %d: %s", word, c.flag, code, stderr)
			}
			if err := json.Unmarshal([]byte(out), c.out); err != nil {
				t.Fatal(err)
			}
		}
		if len(before.Hits) == 0 || len(after.Hits) != 0 {
			t.Fatalf("search %s (%s): %d hits --until 2026-12-01, %d --since; want some, none", word, harness, len(before.Hits), len(after.Hits))
		}
	}

	// Bridge's own export keeps the times through another record.
	claudeSID := ""
	for _, s := range list.Items {
		if s.Harness == "claude-code" {
			claudeSID = s.SessionID
		}
	}
	jsonFile := filepath.Join(t.TempDir(), "claude.json")
	if _, stderr, code := runCLI(t, nil, "--data-dir", dir, "export", claudeSID, "--format", "json", "--output", jsonFile); code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	other := t.TempDir()
	if _, stderr, code := runCLI(t, nil, "--data-dir", other, "import", "--harness", "bridge", jsonFile); code != 0 {
		t.Fatalf("import the Bridge export: %s", stderr)
	}
	want, got := exportTimes(t, dir, claudeSID), checkHarnessTimes(t, other, claudeSID)
	for i := range want.Entries {
		if !got.Entries[i].CreatedAt.Equal(want.Entries[i].CreatedAt) {
			t.Fatalf("entry %d after the Bridge export: %s, want %s", i, got.Entries[i].CreatedAt, want.Entries[i].CreatedAt)
		}
	}

	// A record imported by an older Bridge (every entry and session dated
	// at the import) is corrected: the Claude Code session by importing its
	// file again, every other by the next discovery (migration 0023 makes
	// it read every file once more, as deleting discovered_files does here).
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "bridge.db"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	for _, q := range []string{`UPDATE entries SET created_at = ?1`, `UPDATE sessions SET created_at = ?1, updated_at = ?1`} {
		if _, err := db.Exec(q, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`DELETE FROM discovered_files WHERE harness <> 'claude-code'`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, nil, "--data-dir", dir, "import", "--harness", "claude-code", claudeFile); code != 0 {
		t.Fatalf("import again: %s", stderr)
	}
	discoverJSON(t, env, dir)
	for _, s := range list.Items {
		checkHarnessTimes(t, dir, s.SessionID)
	}
}

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// seedRecord makes a SQLite record with two sessions worth copying: an
// image, tool calls, a harness compaction, a checkpoint (audit records),
// and a branch. It returns the session ids.
func seedRecord(t *testing.T, dir string) []string {
	t.Helper()
	c := startBridge(t, dir)
	c.initialize(nil)
	sid := createFake(t, c)
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: []schema.Content{
		{Type: "text", Text: "say what a picture\ntool ls /tmp"},
		{Type: "image", MediaType: "image/png", Data: onePixelPNG},
	}})
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say working on it\ncompact manual 9000 900")})
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt(`say more work
next json {"summary": "the picture was looked at; next, the tests", "decisions": ["keep the picture"]}`)})
	rpctest.Must(c.Client, c.SessionCheckpoint, schema.SessionCheckpointParams{SessionID: sid, Reason: "manual"})
	other := createFake(t, c)
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: other, Content: prompt("say the second session")})
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit %d", code)
	}
	return []string{sid, other}
}

// exportOf is `bridge export --format json` of a session, from a data
// directory with extra arguments (--store).
func exportOf(t *testing.T, dir, sid string, extra ...string) string {
	t.Helper()
	out, stderr, code := runCLI(t, nil, append([]string{"--data-dir", dir, "export", sid, "--format", "json"}, extra...)...)
	if code != 0 {
		t.Fatalf("export %s: exit %d: %s", sid, code, stderr)
	}
	return out
}

// runCopy runs `bridge store copy --json` and returns its result.
func runCopy(t *testing.T, from, to string) storeCopyResult {
	t.Helper()
	out, stderr, code := runCLI(t, nil, "store", "copy", "--from", from, "--to", to, "--json")
	if code != 0 {
		t.Fatalf("store copy: exit %d: %s%s", code, out, stderr)
	}
	var res storeCopyResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("store copy --json: %v: %s", err, out)
	}
	return res
}

// TestStoreCopySQLite: a copy between two SQLite records carries every
// session so that their exports are byte for byte the same; a second run
// copies nothing; a session grown (and one added) since gets what it lacks.
func TestStoreCopySQLite(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	ids := seedRecord(t, src)
	res := runCopy(t, src, dst)
	if res.Sessions != 2 || res.Skipped != 0 || res.Images != 1 || res.Entries == 0 {
		t.Fatalf("first copy: %+v, want 2 sessions and 1 image", res)
	}
	for _, id := range ids {
		if a, b := exportOf(t, src, id), exportOf(t, dst, id); a != b {
			t.Errorf("session %s: the copy's export differs:\n%s\nwant:\n%s", id, b, a)
		}
	}
	if res := runCopy(t, src, dst); res.Sessions != 0 || res.Entries != 0 || res.Skipped != 2 {
		t.Fatalf("second copy: %+v, want nothing copied", res)
	}
	// The source moves on: one session grows, one is added.
	c := startBridge(t, src)
	c.initialize(nil)
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: ids[1], Content: prompt("say grown since")})
	third := createFake(t, c)
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: third, Content: prompt("say the third")})
	c.exit(true)
	res = runCopy(t, src, filepath.Join(dst, DatabaseFile))
	if res.Sessions != 2 || res.Skipped != 1 {
		t.Fatalf("copy after the source moved on: %+v, want 2 sessions copied and 1 skipped", res)
	}
	for _, id := range append(ids, third) {
		a, b := exportOf(t, src, id), exportOf(t, dst, id)
		if id == ids[1] {
			// A grown session's audit records of the new part stay behind
			// (Restore adds entries to a session it has); its entries match.
			a, b = entriesOf(t, a), entriesOf(t, b)
		}
		if a != b {
			t.Errorf("session %s after the incremental copy differs:\n%s\nwant:\n%s", id, b, a)
		}
	}
}

// entriesOf is the entries member of an export.
func entriesOf(t *testing.T, doc string) string {
	var d struct {
		Entries json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatal(err)
	}
	return string(d.Entries)
}

// TestStoreCopyThroughPostgres: SQLite → PostgreSQL → SQLite gives the
// same export byte for byte, and so does exporting from PostgreSQL itself;
// copying again moves nothing; the password is never printed.
func TestStoreCopyThroughPostgres(t *testing.T) {
	src, back := t.TempDir(), t.TempDir()
	ids := seedRecord(t, src)
	pg := pgtest.URL(t)
	res := runCopy(t, src, pg)
	if res.Sessions != 2 || res.Images != 1 || res.To != redactURL(pg) {
		t.Fatalf("copy to PostgreSQL: %+v", res)
	}
	if res := runCopy(t, src, pg); res.Sessions != 0 || res.Skipped != 2 {
		t.Fatalf("second copy to PostgreSQL: %+v, want nothing copied", res)
	}
	res = runCopy(t, pg, back)
	if res.Sessions != 2 || res.Images != 1 {
		t.Fatalf("copy back from PostgreSQL: %+v", res)
	}
	for _, id := range ids {
		want := exportOf(t, src, id)
		if got := exportOf(t, back, id); got != want {
			t.Errorf("session %s: SQLite → PostgreSQL → SQLite export differs:\n%s\nwant:\n%s", id, got, want)
		}
		if got := exportOf(t, t.TempDir(), id, "--store", pg); got != want {
			t.Errorf("session %s: the export from PostgreSQL differs:\n%s\nwant:\n%s", id, got, want)
		}
	}
	out, stderr, _ := runCLI(t, nil, "store", "copy", "--from", src, "--to", pg)
	if p := pgPassword(t, pg); strings.Contains(out+stderr, p) {
		t.Errorf("store copy printed the password: %s%s", out, stderr)
	}
}

// TestStoreCopyRefusesBadEnds: clear errors for a missing source, the same
// record twice and a URL that is no store.
func TestStoreCopyRefusesBadEnds(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--from", filepath.Join(dir, "nope")}, 2, "needs --from and --to"},
		{[]string{"--from", filepath.Join(dir, "nope"), "--to", dir}, 1, "no such record"},
		{[]string{"--from", dir, "--to", filepath.Join(dir, DatabaseFile)}, 2, "the same record"},
		{[]string{"--from", dir, "--to", "mysql://u:s3cret@h/db"}, 2, "not a store"},
	} {
		out, stderr, code := runCLI(t, nil, append([]string{"store", "copy"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) || strings.Contains(out+stderr, "s3cret") {
			t.Errorf("store copy %v: exit %d: %s%s; want exit %d saying %q", c.args, code, out, stderr, c.code, c.want)
		}
	}
}

func pgPassword(t *testing.T, raw string) string {
	t.Helper()
	for _, s := range secretsOf(raw) {
		return s
	}
	t.Fatal("the test server's URL has no password")
	return ""
}

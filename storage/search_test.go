package storage_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	sqlitedriver "github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

func search(t *testing.T, db *storage.DB, q core.SearchQuery) core.SearchPage {
	t.Helper()
	p, err := db.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("Search(%q): %v", q.Query, err)
	}
	return p
}

func TestSearchRanksExactPhraseAboveScatteredWords(t *testing.T) {
	db := storagetest.Open(t)
	s := newSession(t, db)
	// The scattered entry repeats both words and is short, which bm25 alone
	// would favour; the exact phrase must still come first.
	es := mustAppend(t, db, s.ID,
		user("the parser reads tokens; later the table is flushed; table, then parser again; table"),
		assistant("unrelated words about the weather"),
		assistant("we rebuilt the whole parser table from the grammar file, which took most of the afternoon and several attempts"),
	)
	p := search(t, db, core.SearchQuery{Query: "parser table"})
	if len(p.Hits) != 2 {
		t.Fatalf("hits = %d, want 2: %+v", len(p.Hits), p.Hits)
	}
	if p.Hits[0].EntryID != es[2].ID || p.Hits[1].EntryID != es[0].ID {
		t.Fatalf("order = %s, %s; want the exact phrase (%s) first", p.Hits[0].EntryID, p.Hits[1].EntryID, es[2].ID)
	}
	h := p.Hits[0]
	if h.SessionID != s.ID || h.Harness != "claude-code" || h.Kind != core.KindAssistantMessage || h.Seq != 3 {
		t.Fatalf("hit = %+v", h)
	}
	// The phrase is marked (as one span or word by word) and nothing else.
	r := []rune(h.Snippet)
	var marked []string
	for _, m := range h.Highlights {
		marked = append(marked, strings.Fields(strings.ToLower(string(r[m[0]:m[1]])))...)
	}
	if strings.Join(marked, " ") != "parser table" {
		t.Fatalf("highlights %v mark %q in %q, want the words of the phrase", h.Highlights, marked, h.Snippet)
	}
	if strings.ContainsAny(h.Snippet, "\x01\x02") {
		t.Fatalf("snippet keeps markers: %q", h.Snippet)
	}
}

func TestSearchIndexesToolsCheckpointsAndHandoffs(t *testing.T) {
	db := storagetest.Open(t)
	s := newSession(t, db)
	mustAppend(t, db, s.ID,
		core.NewEntry{Kind: core.KindToolStarted, Payload: core.Payload(map[string]any{"toolId": "t1", "name": "Bash",
			"input": map[string]any{"command": "grep -rn zanzibar ."}})},
		core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]any{"toolId": "t1", "output": "found quokka here"})},
		core.NewEntry{Kind: core.KindCheckpoint, Payload: core.Payload(map[string]any{"summary": "the marmoset refactor is half done"})},
		core.NewEntry{Kind: core.KindMigrationHandoff, Payload: core.Payload(map[string]any{"sourceSessionId": "s_x", "summary": "hand the capybara work over"})},
		core.NewEntry{Kind: core.KindSessionStatus, Payload: core.Payload(map[string]any{"status": "okapi"})},
	)
	for word, kind := range map[string]core.Kind{"zanzibar": core.KindToolStarted, "quokka": core.KindToolCompleted,
		"marmoset": core.KindCheckpoint, "capybara": core.KindMigrationHandoff} {
		p := search(t, db, core.SearchQuery{Query: word})
		if len(p.Hits) != 1 || p.Hits[0].Kind != kind {
			t.Errorf("%s: hits %+v, want one %s", word, p.Hits, kind)
		}
	}
	// Identifiers and bookkeeping are not text.
	for _, word := range []string{"okapi", "t1", "s_x"} {
		if p := search(t, db, core.SearchQuery{Query: word}); len(p.Hits) != 0 {
			t.Errorf("%s: %d hits, want none", word, len(p.Hits))
		}
	}
}

func TestSearchFiltersAndPages(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	a, err := db.CreateSession(ctx, core.Session{Harness: "codex", Cwd: "/repo/a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.CreateSession(ctx, core.Session{Harness: "opencode", Cwd: "/repo/b"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		mustAppend(t, db, a.ID, user(fmt.Sprintf("lemur number %d", i)))
		mustAppend(t, db, b.ID, user(fmt.Sprintf("lemur count %d", i)))
	}
	if n := len(search(t, db, core.SearchQuery{Query: "lemur", Limit: 100}).Hits); n != 10 {
		t.Fatalf("all: %d hits, want 10", n)
	}
	for _, q := range []core.SearchQuery{{Query: "lemur", Harness: "codex"}, {Query: "lemur", Cwd: "/repo/a"}, {Query: "lemur", SessionID: a.ID}} {
		p := search(t, db, q)
		if len(p.Hits) != 5 {
			t.Fatalf("%+v: %d hits, want 5", q, len(p.Hits))
		}
		for _, h := range p.Hits {
			if h.SessionID != a.ID {
				t.Fatalf("%+v: hit from %s", q, h.SessionID)
			}
		}
	}
	if n := len(search(t, db, core.SearchQuery{Query: "lemur", Since: time.Now().Add(time.Hour)}).Hits); n != 0 {
		t.Fatalf("since the future: %d hits", n)
	}
	if n := len(search(t, db, core.SearchQuery{Query: "lemur", Until: time.Now().Add(time.Hour)}).Hits); n != 10 {
		t.Fatalf("until the future: %d hits, want 10", n)
	}
	// Pages of 3 cover every hit once.
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		p := search(t, db, core.SearchQuery{Query: "lemur", Limit: 3, Cursor: cursor})
		for _, h := range p.Hits {
			if seen[h.EntryID] {
				t.Fatalf("entry %s on two pages", h.EntryID)
			}
			seen[h.EntryID] = true
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if len(seen) != 10 {
		t.Fatalf("paging saw %d entries, want 10", len(seen))
	}
}

func TestSearchSyntaxErrorsAreInvalid(t *testing.T) {
	db := storagetest.Open(t)
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("alpha beta"))
	for _, q := range []string{`"unbalanced`, `alpha AND`, `(alpha`, `nosuchcolumn: alpha`, `   `} {
		_, err := db.Search(context.Background(), core.SearchQuery{Query: q})
		if core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("%q: err %v (code %s), want invalid", q, err, core.ErrorCode(err))
			continue
		}
		if strings.Contains(err.Error(), "SQL logic error") && !strings.Contains(err.Error(), "search query") {
			t.Errorf("%q: raw SQL error: %v", q, err)
		}
	}
	if _, err := db.Search(context.Background(), core.SearchQuery{Query: "alpha", Cursor: "x"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("bad cursor: %v", err)
	}
	// Words that are not FTS5 barewords need no escaping.
	mustAppend(t, db, s.ID, user("edit main.go and don't-panic"))
	for _, q := range []string{"main.go", "don't-panic", "alpha AND beta", `"alpha beta"`, "alph*"} {
		if p := search(t, db, core.SearchQuery{Query: q}); len(p.Hits) != 1 {
			t.Errorf("%q: %d hits, want 1", q, len(p.Hits))
		}
	}
}

// TestSearchUpgradesA0004Database opens a record written by a Bridge of
// schema version 4 (search index inside the record, filled by each append)
// with this one: the old index table is dropped, the index file is built
// from the entries, and search finds them.
func TestSearchUpgradesA0004Database(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	old, err := sqlitedriver.Open("file:"+path+"?_pragma=journal_mode(wal)", fts5.Register)
	if err != nil {
		t.Fatal(err)
	}
	old.SetMaxOpenConns(1)
	for v, name := range []string{"0001_init.sql", "0002_search.sql", "0003_discovered.sql", "0004_previews.sql"} {
		b, err := os.ReadFile(filepath.Join("migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := old.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)`, v+1, name); err != nil {
			if _, err := old.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			if _, err := old.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)`, v+1, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	// What a version-4 Bridge wrote: entries and, with them, their rows in
	// the record's own index.
	for _, q := range []string{
		`INSERT INTO sessions (id, harness, cwd, created_at, updated_at, head_id) VALUES ('s_old', 'codex', '/w', 1, 1, 'e_2')`,
		`INSERT INTO entries (id, session_id, parent_id, seq, kind, payload, created_at) VALUES
			('e_1', 's_old', NULL, 1, 'user.message', '{"text":"ancient wombat"}', 1),
			('e_2', 's_old', 'e_1', 2, 'assistant.message', '{"text":"older numbat"}', 2)`,
		`INSERT INTO entry_search (text, entry_id) VALUES ('ancient wombat', 'e_1'), ('older numbat', 'e_2')`,
	} {
		if _, err := old.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.SchemaVersion(ctx); err != nil || v != storage.KnownSchemaVersion() {
		t.Fatalf("schema version after the upgrade = %d, %v; want %d", v, err, storage.KnownSchemaVersion())
	}
	var n int
	if err := db.SQL().QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'entry_search'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the record still holds the old index table (%d, %v)", n, err)
	}
	for _, w := range []string{"wombat", "numbat"} {
		if p := search(t, db, core.SearchQuery{Query: w}); len(p.Hits) != 1 || p.Hits[0].SessionID != "s_old" {
			t.Errorf("%s: %+v after the upgrade, want 1 hit in s_old", w, p.Hits)
		}
	}
	// Entries appended after the upgrade are found too.
	mustAppend(t, db, "s_old", user("newer quokka"))
	if p := search(t, db, core.SearchQuery{Query: "quokka"}); len(p.Hits) != 1 {
		t.Errorf("quokka: %d hits, want 1", len(p.Hits))
	}
}

// TestSearchRebuildsItsIndex: the index is derived from the record; a
// missing index file, or one that belongs to another record, is rebuilt.
func TestSearchRebuildsItsIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "bridge.db")
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("lonely axolotl"), assistant("quiet okapi"))
	if p := search(t, db, core.SearchQuery{Query: "axolotl"}); len(p.Hits) != 1 {
		t.Fatalf("axolotl: %d hits, want 1", len(p.Hits))
	}
	db.Close()
	for _, suffix := range []string{"-search", "-search-wal", "-search-shm"} {
		_ = os.Remove(path + suffix)
	}
	// Another record, whose index file is then put next to the first one.
	other := filepath.Join(dir, "other.db")
	db2, err := storage.Open(ctx, other, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s2 := newSession(t, db2)
	mustAppend(t, db2, s2.ID, user("stray narwhal"), user("stray narwhal again"))
	db2.Close()

	db, err = storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"axolotl", "okapi"} {
		if p := search(t, db, core.SearchQuery{Query: w}); len(p.Hits) != 1 {
			t.Errorf("%s: %d hits after the index file was removed, want 1", w, len(p.Hits))
		}
	}
	db.Close()
	for _, suffix := range []string{"-search", "-search-wal", "-search-shm"} {
		b, err := os.ReadFile(other + suffix)
		if err == nil {
			err = os.WriteFile(path+suffix, b, 0o600)
		} else if os.IsNotExist(err) {
			err = os.Remove(path + suffix)
			if os.IsNotExist(err) {
				err = nil
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	db, err = storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if p := search(t, db, core.SearchQuery{Query: "narwhal"}); len(p.Hits) != 0 {
		t.Errorf("narwhal (only in the other record): %d hits, want 0", len(p.Hits))
	}
	if p := search(t, db, core.SearchQuery{Query: "okapi"}); len(p.Hits) != 1 {
		t.Errorf("okapi: %d hits with another record's index file in place, want 1", len(p.Hits))
	}
	if c := storagetest.ReadIndexCounts(t, path); !c.Complete() {
		t.Errorf("index after the rebuild: %+v", c)
	}
}

const searchHelperEnv = "BRIDGE_SEARCH_HELPER"

// TestSearchHelperProcess is not a test: it is the child of
// TestKillDuringImportKeepsIndexInStep, importing batches until killed,
// either inside a transaction of the record (BRIDGE_KILL_AT: at its Nth
// entry row; BRIDGE_KILL_COMMIT_AT: before its Nth commit) or inside one of the index (BRIDGE_KILL_INDEX_AT: at its Nth
// index row; BRIDGE_KILL_INDEX_COMMIT_AT: before its Nth commit). With
// BRIDGE_BULK each batch is written with UpdateBulk.
func TestSearchHelperProcess(t *testing.T) {
	if os.Getenv(searchHelperEnv) == "" {
		return
	}
	ctx := context.Background()
	at, _ := strconv.Atoi(os.Getenv("BRIDGE_KILL_AT"))
	indexAt, _ := strconv.Atoi(os.Getenv("BRIDGE_KILL_INDEX_AT"))
	seen, recordCommits := 0, 0
	recordCommitAt, _ := strconv.Atoi(os.Getenv("BRIDGE_KILL_COMMIT_AT"))
	hook := func(point string) {
		if point == "commit.before" {
			if recordCommits++; recordCommits == recordCommitAt {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
		if point != "entry.insert" {
			return
		}
		seen++
		if seen == at {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	commitAt, _ := strconv.Atoi(os.Getenv("BRIDGE_KILL_INDEX_COMMIT_AT"))
	var indexed, commits atomic.Int64
	indexHook := func(point string) {
		if point == "index.insert" && indexed.Add(1) == int64(indexAt) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		if point == "index.commit.before" && commits.Add(1) == int64(commitAt) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	db, err := storage.Open(ctx, os.Getenv("BRIDGE_DB"), storage.Options{Hook: hook, IndexHook: indexHook})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sid := os.Getenv("BRIDGE_SESSION")
	batches, _ := strconv.Atoi(os.Getenv("BRIDGE_BATCHES"))
	tag := os.Getenv("BRIDGE_TAG")
	for b := 0; ; b++ {
		if batches > 0 && b == batches {
			if err := db.Close(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
		update := db.Update
		if os.Getenv("BRIDGE_BULK") != "" { // each batch its own bulk write, indexed while it runs
			update = db.UpdateBulk
		}
		err := update(ctx, func(w core.Writer) error {
			batch := make([]core.NewEntry, 0, 50)
			for i := 0; i < 50; i++ {
				n := b*50 + i
				batch = append(batch, core.NewEntry{Kind: core.KindAssistantMessage, NativeID: tag + "n" + strconv.Itoa(n),
					Payload: core.Payload(map[string]string{"text": fmt.Sprintf("imported pangolin line %d tag%d", n, n)})})
			}
			_, err := w.Append(ctx, sid, batch...)
			return err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// TestKillDuringImportKeepsIndexInStep kills (SIGKILL) a process importing
// batches of 50 entries, inside a transaction of the record or inside one of
// the search index, and counts both in the files left behind: the record
// holds whole batches; the index holds exactly the entries it says it
// covers (every entry up to its high-water mark, nothing else), which may
// be fewer than the record's. Then, reopened, search catches the index up
// before answering: it finds every entry, the last one included, and the
// counts agree.
func TestKillDuringImportKeepsIndexInStep(t *testing.T) {
	cases := []struct {
		name, env string
		at        int
	}{
		{"record-1", "BRIDGE_KILL_AT", 1}, {"record-49", "BRIDGE_KILL_AT", 49}, {"record-50", "BRIDGE_KILL_AT", 50},
		{"record-51", "BRIDGE_KILL_AT", 51}, {"record-377", "BRIDGE_KILL_AT", 377}, {"record-2000", "BRIDGE_KILL_AT", 2000},
		{"index-1", "BRIDGE_KILL_INDEX_AT", 1}, {"index-75", "BRIDGE_KILL_INDEX_AT", 75}, {"index-1200", "BRIDGE_KILL_INDEX_AT", 1200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := killedImport(t, false, c.env, c.at)
			before := storagetest.ReadIndexCounts(t, path)
			if before.Entries%50 != 0 || !before.InStep() {
				t.Fatalf("after the kill: %+v; want whole batches of 50 in the record and the index in step with its mark", before)
			}
			if c.env == "BRIDGE_KILL_AT" && before.Entries != (c.at-1)/50*50 {
				t.Fatalf("after a kill at entry %d: %d entries, want %d", c.at, before.Entries, (c.at-1)/50*50)
			}
			if c.env == "BRIDGE_KILL_INDEX_AT" && (before.Covered >= before.Searchable || before.Entries < c.at) {
				t.Fatalf("after a kill inside the index at row %d: %+v; want the index behind the record", c.at, before)
			}
			t.Logf("left behind: %d entries, index covers %d", before.Entries, before.Covered)

			searchCatchesUp(t, path, before.Entries)
		})
	}
}

// killedImport makes a database with one session and runs
// TestSearchHelperProcess importing into it (through UpdateBulk when bulk)
// until killEnv's point at says to SIGKILL itself; it returns the
// database's path.
func killedImport(t *testing.T, bulk bool, killEnv string, at int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := storage.Open(context.Background(), path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, db)
	db.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSearchHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), searchHelperEnv+"=1", "BRIDGE_DB="+path, "BRIDGE_SESSION="+s.ID,
		killEnv+"="+strconv.Itoa(at))
	if bulk {
		cmd.Env = append(cmd.Env, "BRIDGE_BULK=1")
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	return path
}

// searchCatchesUp reopens the database a killed import left with want
// entries: search finds every one, the last included, and afterwards the
// index is complete over them.
func searchCatchesUp(t *testing.T, path string, want int) {
	t.Helper()
	db, err := storage.Open(context.Background(), path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if want > 0 {
		p := search(t, db, core.SearchQuery{Query: "pangolin", Limit: 200})
		if len(p.Hits) != min(want, 200) {
			t.Fatalf("search finds %d, want %d", len(p.Hits), min(want, 200))
		}
		last := fmt.Sprintf("tag%d", want-1)
		if p := search(t, db, core.SearchQuery{Query: last}); len(p.Hits) != 1 {
			t.Fatalf("%s (the last entry recorded): %d hits, want 1", last, len(p.Hits))
		}
	}
	db.Close()
	if after := storagetest.ReadIndexCounts(t, path); !after.Complete() || after.Entries != want {
		t.Fatalf("after search: %+v; want the index complete over %d entries", after, want)
	}
}

func TestSearchTextReadsEveryStringButIdentifiers(t *testing.T) {
	payload := []byte(`{"toolId":"t_1","name":"Bash","input":{"command":"echo \"hi\"\nthere \u00e9t\u00e9","timeout":30,"ok":true,"n":null},
		"output":["first", {"sessionId":"s_9","text":"second"}, 12.5e3, []], "mediaType":"image/png", "empty":""}`)
	got := storage.SearchText(core.KindToolStarted, payload)
	want := "Bash\necho \"hi\"\nthere été\nfirst\nsecond"
	if got != want {
		t.Fatalf("SearchText = %q, want %q", got, want)
	}
	if got := storage.SearchText(core.KindSessionStatus, []byte(`{"status":"idle"}`)); got != "" {
		t.Fatalf("bookkeeping kind indexed: %q", got)
	}
	if got := storage.SearchText(core.KindUserMessage, []byte(`{"text":"a\u0001b\u0002c"}`)); strings.ContainsAny(got, "\x01\x02") {
		t.Fatalf("markers kept: %q", got)
	}
	long := `{"text":"` + strings.Repeat("é", 40000) + `"}`
	if got := storage.SearchText(core.KindUserMessage, []byte(long)); len(got) > 64<<10 || !utf8.ValidString(got) {
		t.Fatalf("long text: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}

// TestEntryRowidsIncrease checks what the search indexer relies on: every
// entry committed gets a rowid above every entry committed before it,
// whatever wrote it (Append, AppendTo onto an older entry, Update, group
// commits with a failing call rolled back to its savepoint, Restore of a
// dump), so "indexed up to rowid N" never misses a later entry.
func TestEntryRowidsIncrease(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	var order []string // entry ids in commit order
	add := func(es []core.Entry) {
		for _, e := range es {
			order = append(order, e.ID)
		}
	}
	first := mustAppend(t, db, s.ID, user("one"), assistant("two"))
	add(first)
	es, err := db.AppendTo(ctx, s.ID, first[0].ID, assistant("branch"))
	if err != nil {
		t.Fatal(err)
	}
	add(es)
	if err := db.Update(ctx, func(w core.Writer) error {
		a, err := w.Append(ctx, s.ID, user("three"))
		if err != nil {
			return err
		}
		add(a)
		b, err := w.AppendTo(ctx, s.ID, "", user("new root"))
		add(b)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Concurrent calls, grouped by the writer; every other one fails and is
	// rolled back to its savepoint after its entry row was written.
	var wg sync.WaitGroup
	results := make([][]core.Entry, 16)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 1 {
				_, _ = db.Append(ctx, s.ID, user("doomed"), core.NewEntry{Kind: core.KindUserMessage, ID: first[0].ID,
					Payload: core.Payload(map[string]string{"text": "duplicate id"})})
				return
			}
			results[i], _ = db.Append(ctx, s.ID, user(fmt.Sprintf("concurrent %d", i)))
		}(i)
	}
	wg.Wait()
	// Restore of another record's session.
	other := storagetest.Open(t)
	os2 := newSession(t, other)
	mustAppend(t, other, os2.ID, user("restored one"), assistant("restored two"))
	d, err := other.Dump(ctx, os2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Restore(ctx, d); err != nil {
		t.Fatal(err)
	}
	last := mustAppend(t, db, s.ID, user("after restore"))

	rowid := func(id string) int64 {
		var r int64
		if err := db.SQL().QueryRow(`SELECT rowid FROM entries WHERE id = ?`, id).Scan(&r); err != nil {
			t.Fatalf("rowid of %s: %v", id, err)
		}
		return r
	}
	prev := int64(0)
	for _, id := range order {
		r := rowid(id)
		if r <= prev {
			t.Fatalf("entry %s has rowid %d, not above the previous entry's %d", id, r, prev)
		}
		prev = r
	}
	var maxConcurrent int64
	for _, es := range results {
		for _, e := range es {
			if r := rowid(e.ID); r <= prev {
				t.Fatalf("concurrent entry %s: rowid %d, not above %d", e.ID, r, prev)
			} else {
				maxConcurrent = max(maxConcurrent, r)
			}
		}
	}
	var minRestored, maxRestored int64
	if err := db.SQL().QueryRow(`SELECT min(rowid), max(rowid) FROM entries WHERE session_id = ?`, os2.ID).Scan(&minRestored, &maxRestored); err != nil {
		t.Fatal(err)
	}
	if minRestored <= maxConcurrent || rowid(last[0].ID) <= maxRestored {
		t.Fatalf("rowids: concurrent up to %d, restored %d..%d, then %d", maxConcurrent, minRestored, maxRestored, rowid(last[0].ID))
	}
	if p := search(t, db, core.SearchQuery{Query: "restored"}); len(p.Hits) != 2 {
		t.Fatalf("restored entries: %d hits, want 2", len(p.Hits))
	}
}

// TestSearchInAFolderWithAnAwkwardName: the index file sits next to the
// record (owner-only, like it) and attaches it by name; quotes, spaces,
// '#', '?' and '%' in the path are no trouble.
func TestSearchInAFolderWithAnAwkwardName(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "o'brien's #1 ?data 100%", "bridge.db")
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("a capybara in the folder"),
		core.NewEntry{Kind: core.KindSessionStatus, Payload: core.Payload(map[string]string{"status": "idle capybara"})})
	if p := search(t, db, core.SearchQuery{Query: "capybara", Harness: "claude-code"}); len(p.Hits) != 1 {
		t.Fatalf("capybara: %d hits, want 1 (a status entry has no searchable text)", len(p.Hits))
	}
	// The index covers the status entry too (its mark passed it), without a row.
	if c := storagetest.ReadIndexCounts(t, path); !c.Complete() || c.Rows != 1 || c.Entries != 2 {
		t.Fatalf("index: %+v", c)
	}
	for _, p := range []string{path + "-search", path + "-search-wal", path + "-search-shm"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("index file %s: %v, %v; want mode 0600", p, fi, err)
		}
	}
}

// TestTwoProcessesIndexTheSameRecord: two processes append to one record
// at once, each with its own indexer; the index ends complete, each entry
// indexed once (an indexer that finds the mark moved by the other skips
// what the other indexed).
func TestTwoProcessesIndexTheSameRecord(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, db)
	db.Close()
	var cmds []*exec.Cmd
	for _, tag := range []string{"a", "b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSearchHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), searchHelperEnv+"=1", "BRIDGE_DB="+path, "BRIDGE_SESSION="+s.ID,
			"BRIDGE_BATCHES=40", "BRIDGE_TAG="+tag)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	if c := storagetest.ReadIndexCounts(t, path); !c.Complete() || c.Entries != 2*40*50 || c.Rows != c.Entries {
		t.Fatalf("after two processes: %+v; want 4000 entries, each indexed once", c)
	}
}

// TestSearchReplacesAnUnreadableIndex: an index file SQLite cannot read
// (here: not a database at all) is derived data; it is replaced and rebuilt.
func TestSearchReplacesAnUnreadableIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("a stubborn wolverine"))
	db.Close()
	for _, suffix := range []string{"-search-wal", "-search-shm"} {
		_ = os.Remove(path + suffix)
	}
	if err := os.WriteFile(path+"-search", []byte(strings.Repeat("this is not a database file ", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err = storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatalf("open with an unreadable index file: %v", err)
	}
	defer db.Close()
	if p := search(t, db, core.SearchQuery{Query: "wolverine"}); len(p.Hits) != 1 {
		t.Fatalf("wolverine: %d hits after the index was replaced, want 1", len(p.Hits))
	}
}

// TestSearchSnippetIsCutAroundTheMatch: a match deep in a long entry is
// shown with the words around it, cut with "…" on both sides, and the
// highlight (in code points) covers the matched word even after accented
// text and a differently cased, accented query.
func TestSearchSnippetIsCutAroundTheMatch(t *testing.T) {
	db := storagetest.Open(t)
	s := newSession(t, db)
	long := strings.Repeat("été déjà vu filler words here ", 40) + "the Crème brûlée recipe " + strings.Repeat("more trailing words ", 40)
	mustAppend(t, db, s.ID, assistant(long))
	p := search(t, db, core.SearchQuery{Query: "CREME"})
	if len(p.Hits) != 1 {
		t.Fatalf("hits = %d, want 1", len(p.Hits))
	}
	h := p.Hits[0]
	if !strings.HasPrefix(h.Snippet, "…") || !strings.HasSuffix(h.Snippet, "…") || utf8.RuneCountInString(h.Snippet) > 300 {
		t.Fatalf("snippet %q: want a cut window around the match", h.Snippet)
	}
	if len(h.Highlights) != 1 {
		t.Fatalf("highlights %v in %q, want one", h.Highlights, h.Snippet)
	}
	r := []rune(h.Snippet)
	if got := string(r[h.Highlights[0][0]:h.Highlights[0][1]]); got != "Crème" {
		t.Fatalf("highlight marks %q in %q, want Crème", got, h.Snippet)
	}
	if !strings.Contains(h.Snippet, "brûlée recipe") {
		t.Fatalf("snippet %q lacks the words after the match", h.Snippet)
	}
}

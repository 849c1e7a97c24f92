package storage_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

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

func TestSearchIndexesEntriesRecordedBeforeTheIndexExisted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bridge.db")
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, db)
	mustAppend(t, db, s.ID, user("ancient wombat"), assistant("older numbat"))
	// Make the database look like one written before migration 2 (only
	// the migrations not recorded run, so only migration 2 runs again).
	for _, q := range []string{`DROP TABLE entry_search`, `DELETE FROM schema_migrations WHERE version = 2`} {
		if _, err := db.SQL().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db, err = storage.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, w := range []string{"wombat", "numbat"} {
		if p := search(t, db, core.SearchQuery{Query: w}); len(p.Hits) != 1 {
			t.Errorf("%s: %d hits after the upgrade, want 1", w, len(p.Hits))
		}
	}
}

const searchHelperEnv = "BRIDGE_SEARCH_HELPER"

// TestSearchHelperProcess is not a test: it is the child of
// TestKillDuringImportKeepsIndexInStep, importing batches until killed.
func TestSearchHelperProcess(t *testing.T) {
	if os.Getenv(searchHelperEnv) == "" {
		return
	}
	ctx := context.Background()
	at, _ := strconv.Atoi(os.Getenv("BRIDGE_KILL_AT"))
	seen := 0
	hook := func(point string) {
		if point != "entry.insert" {
			return
		}
		seen++
		if seen == at {
			// Killed between an entry's row and its index row.
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	db, err := storage.Open(ctx, os.Getenv("BRIDGE_DB"), storage.Options{Hook: hook})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sid := os.Getenv("BRIDGE_SESSION")
	for b := 0; ; b++ {
		err := db.Update(ctx, func(w core.Writer) error {
			batch := make([]core.NewEntry, 0, 50)
			for i := 0; i < 50; i++ {
				n := b*50 + i
				batch = append(batch, core.NewEntry{Kind: core.KindAssistantMessage, NativeID: "n" + strconv.Itoa(n),
					Payload: core.Payload(map[string]string{"text": fmt.Sprintf("imported pangolin line %d", n)})})
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

func TestKillDuringImportKeepsIndexInStep(t *testing.T) {
	ctx := context.Background()
	for _, at := range []int{1, 49, 50, 51, 377} {
		t.Run(strconv.Itoa(at), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bridge.db")
			db, err := storage.Open(ctx, path, storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := newSession(t, db)
			db.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestSearchHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), searchHelperEnv+"=1", "BRIDGE_DB="+path, "BRIDGE_SESSION="+s.ID,
				"BRIDGE_KILL_AT="+strconv.Itoa(at))
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
			}
			db, err = storage.Open(ctx, path, storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var entries, indexed, orphans int
			q := db.SQL()
			if err := q.QueryRow(`SELECT count(*) FROM entries`).Scan(&entries); err != nil {
				t.Fatal(err)
			}
			if err := q.QueryRow(`SELECT count(*) FROM entry_search`).Scan(&indexed); err != nil {
				t.Fatal(err)
			}
			if err := q.QueryRow(`SELECT count(*) FROM entry_search WHERE entry_id NOT IN (SELECT id FROM entries)`).Scan(&orphans); err != nil {
				t.Fatal(err)
			}
			want := (at - 1) / 50 * 50 // whole batches committed before the kill
			if entries != want || indexed != want || orphans != 0 {
				t.Fatalf("after kill at entry %d: entries %d, index rows %d (orphans %d); want %d and %d", at, entries, indexed, orphans, want, want)
			}
			if want > 0 {
				p := search(t, db, core.SearchQuery{Query: "pangolin", Limit: 200})
				if len(p.Hits) != min(want, 200) {
					t.Fatalf("search finds %d, want %d", len(p.Hits), min(want, 200))
				}
			}
		})
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

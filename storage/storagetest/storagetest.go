// Package storagetest opens real, throw-away storage databases for tests in
// other packages.
package storagetest

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// Open returns a fresh database in a file under tb.TempDir(), closed when
// the test ends. It fails the test if the database cannot be opened.
func Open(tb testing.TB) *storage.DB {
	tb.Helper()
	return OpenWith(tb, storage.Options{})
}

// OpenWith is Open with options (a Hook, a BusyTimeout).
func OpenWith(tb testing.TB, opts storage.Options) *storage.DB {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "bridge.db")
	db, err := storage.Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatalf("storagetest: open %s: %v", path, err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("storagetest: close %s: %v", path, err)
		}
	})
	return db
}

// IndexCounts is how the search index of a record stands (see
// ReadIndexCounts).
type IndexCounts struct {
	Entries    int   // entries in the record
	Searchable int   // of them, those with searchable text (storage.SearchText)
	Head       int64 // rowid of the record's newest entry
	IndexedTo  int64 // the index says it covers every entry with rowid <= IndexedTo
	Covered    int   // searchable entries with rowid <= IndexedTo
	Rows       int   // rows of the index
	Orphans    int   // index rows that are not a searchable entry at or below IndexedTo
}

// InStep reports whether the index holds exactly the searchable entries it
// says it covers.
func (c IndexCounts) InStep() bool {
	return c.Rows == c.Covered && c.Orphans == 0 && c.IndexedTo <= c.Head
}

// Complete reports whether the index is in step and covers the whole record.
func (c IndexCounts) Complete() bool {
	return c.InStep() && c.IndexedTo == c.Head && c.Covered == c.Searchable
}

// ReadIndexCounts reads the record at path and its search index file
// directly with SQL, without opening them through storage (so no indexer
// runs and nothing is caught up first).
func ReadIndexCounts(tb testing.TB, path string) IndexCounts {
	tb.Helper()
	uri := func(p string) string { return (&url.URL{Scheme: "file", OmitHost: true, Path: p}).String() }
	q, err := sql.Open("sqlite3", uri(path+"-search"))
	if err != nil {
		tb.Fatal(err)
	}
	defer q.Close()
	q.SetMaxOpenConns(1)
	if _, err := q.Exec(`ATTACH DATABASE ? AS rec`, uri(path)); err != nil {
		tb.Fatalf("storagetest: attach the record: %v", err)
	}
	var c IndexCounts
	if err := q.QueryRow(`SELECT indexed_to FROM search_state`).Scan(&c.IndexedTo); err != nil {
		tb.Fatalf("storagetest: read the index state: %v", err)
	}
	indexed := map[int64]bool{}
	rows, err := q.Query(`SELECT id FROM entry_search_docsize`)
	if err != nil {
		tb.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			tb.Fatal(err)
		}
		indexed[id] = true
		c.Rows++
	}
	rows.Close()
	rows, err = q.Query(`SELECT rowid, kind, payload FROM rec.entries ORDER BY rowid`)
	if err != nil {
		tb.Fatal(err)
	}
	matched := 0
	for rows.Next() {
		var rowid int64
		var kind, payload string
		if err := rows.Scan(&rowid, &kind, &payload); err != nil {
			tb.Fatal(err)
		}
		c.Entries++
		c.Head = rowid
		if storage.SearchText(core.Kind(kind), []byte(payload)) == "" {
			continue
		}
		c.Searchable++
		if rowid <= c.IndexedTo {
			c.Covered++
			if indexed[rowid] {
				matched++
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	c.Orphans = c.Rows - matched
	return c
}

package postgres_test

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/postgres"
)

// The gaps in the seqs of gappedDump.
const (
	noGaps      = iota
	gapsEvery   // two seqs missing before every seventh entry, ten before entry 1000
	gapAtABatch // ten missing before entry 1000 (the first of the restore's second batch)
)

// gappedDump is a session of n entries whose seqs have gaps, each
// entry the child of the one before it except where parent names another
// (an index, or -1 for a new root); its head is entry head.
func gappedDump(id string, n, head, gaps int, parent map[int]int, pad int) core.SessionDump {
	r := rand.New(rand.NewSource(int64(n)))
	news := storetest.RandomEntries(r, n)
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	d := core.SessionDump{Session: core.Session{ID: id, Harness: "codex", Title: "gaps", CreatedAt: start, UpdatedAt: start}}
	seq := int64(0)
	for i, ne := range news {
		seq++
		switch {
		case gaps != noGaps && i == 1000:
			seq += 10
		case gaps == gapsEvery && i%7 == 0 && i > 0:
			seq += 2
		}
		p := i - 1
		if q, ok := parent[i]; ok {
			p = q
		}
		e := core.Entry{ID: fmt.Sprintf("e_%s_%04d", id, i), SessionID: id, Seq: seq, Kind: ne.Kind, Payload: ne.Payload,
			NativeID: ne.NativeID, CreatedAt: start.Add(time.Duration(i) * time.Second)}
		if pad > 0 && i%2 == 1 {
			e.Kind, e.NativeID = core.KindAssistantMessage, ""
			e.Payload = core.Payload(core.AssistantMessagePayload{Text: fmt.Sprintf("%d %s", i, strings.Repeat("y", pad))})
		}
		if p >= 0 {
			e.ParentID = d.Entries[p].ID
		}
		d.Entries = append(d.Entries, e)
	}
	d.Session.HeadID = d.Entries[head].ID
	return d
}

// TestRestoreAcrossBatchesAsSQLiteDoes: sessions whose seqs have gaps and
// whose branches start on either side of the PostgreSQL restore's batch
// boundaries (1,000 entries, or 1 MiB of payloads) restore as on SQLite,
// whole and in two parts
// (the second restore adds to a session already present): the same
// branched flag, dump, active branch, history pages and window, and the
// next append goes to the same seq under the same parent.
func TestRestoreAcrossBatchesAsSQLiteDoes(t *testing.T) {
	pg := open(t)
	lite, err := storage.Open(ctx, filepath.Join(t.TempDir(), "bridge.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	cases := []struct {
		name   string
		n      int
		head   int
		gaps   int
		parent map[int]int
		split  int // restored first: the entries before it
		pad    int // every other entry's text has this many bytes more
	}{
		{"chain", 2600, 2599, noGaps, nil, 1500, 0},
		{"chain-with-gaps", 2600, 2599, gapsEvery, nil, 1000, 0},
		{"gap-at-a-batch", 2600, 2599, gapAtABatch, nil, 1500, 0},
		{"gap-at-the-split", 2600, 2599, gapAtABatch, nil, 1000, 0},
		// the only branch: entry 1000, the first of the second batch,
		// under 998 of the first.
		{"branch-across-a-batch", 2600, 2599, noGaps, map[int]int{1000: 998}, 1500, 0},
		// entry 1000 (the first of the second batch) under 998, 2000
		// under 1500 (two batches back), a new root at 2500; the head on
		// the middle branch.
		{"branches", 2600, 2300, gapsEvery, map[int]int{1000: 998, 2000: 1500, 2500: -1}, 1500, 0},
		// the first entry the second restore adds is a child of an entry
		// stored by the first, not of the newest.
		{"branch-at-the-split", 2600, 2599, noGaps, map[int]int{1200: 1100}, 1200, 0},
		// batches cut by their payloads' size (1 MiB: about 50 entries)
		// rather than their number; a branch across one of them.
		{"large-entries", 400, 399, gapAtABatch, map[int]int{120: 60}, 150, 40 << 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, parts := range []string{"whole", "two-parts"} {
				d := gappedDump(c.name+"_"+parts, c.n, c.head, c.gaps, c.parent, c.pad)
				for _, st := range []core.Dumper{pg, lite} {
					if parts == "two-parts" {
						first := d
						first.Entries = d.Entries[:c.split]
						first.Session.HeadID = first.Entries[c.split-1].ID
						if n, err := st.Restore(ctx, first); err != nil || n != c.split {
							t.Fatalf("%T: first part: %d, %v", st, n, err)
						}
					}
					want := len(d.Entries)
					if parts == "two-parts" {
						want -= c.split
					}
					if n, err := st.Restore(ctx, d); err != nil || n != want {
						t.Fatalf("%T: restore: added %d, %v; want %d", st, n, err, want)
					}
				}
				sameRestored(t, pg, lite, d.Session.ID, d.Entries[c.n/2].Seq)
			}
		})
	}
}

// sameRestored fails unless session id reads the same on both stores
// (middle is a seq to read a history page before), and takes the same
// next append.
func sameRestored(t *testing.T, pg *postgres.DB, lite *storage.DB, id string, middle int64) {
	t.Helper()
	var pgBranched, liteBranched bool
	if err := pg.Pool().QueryRow(ctx, `SELECT branched FROM sessions WHERE id = $1`, id).Scan(&pgBranched); err != nil {
		t.Fatal(err)
	}
	if err := lite.SQL().QueryRowContext(ctx, `SELECT branched FROM sessions WHERE id = ?`, id).Scan(&liteBranched); err != nil {
		t.Fatal(err)
	}
	if pgBranched != liteBranched {
		t.Errorf("branched: PostgreSQL %v, SQLite %v", pgBranched, liteBranched)
	}
	if g, w := dumpJSON(t, pg, id), dumpJSON(t, lite, id); g != w {
		t.Errorf("dumps differ:\npostgres %.300s\nsqlite   %.300s", g, w)
	}
	read := func(st core.Store) string {
		br, err := st.ActiveBranch(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range br {
			ids = append(ids, e.ID)
		}
		head, more, err := st.History(ctx, id, 0, 60)
		if err != nil {
			t.Fatal(err)
		}
		mid, midMore, err := st.History(ctx, id, middle, 60)
		if err != nil {
			t.Fatal(err)
		}
		win, err := st.Window(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		next, err := st.Append(ctx, id, core.NewEntry{ID: "e_next_" + id, Kind: core.KindUserMessage,
			Payload: core.Payload(core.UserMessagePayload{Text: "next"})})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("branch %v\nhistory %s %v\nbefore %d: %s %v\nwindow %s\nnext seq %d parent %s",
			ids, mustJSON(t, head), more, middle, mustJSON(t, mid), midMore, mustJSON(t, win), next[0].Seq, next[0].ParentID)
	}
	if g, w := read(pg), read(lite); g != w {
		t.Errorf("reads differ:\npostgres %.2000s\nsqlite   %.2000s", g, w)
	}
}

package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestStorePostgresConcurrentIngest: two, then eight `bridge import`
// processes on one PostgreSQL record, each importing its own transcript
// into its own session at the same time, while one more process importing
// a large transcript is killed (kill -9) mid-import. Nothing is lost: every
// finished import's session holds exactly the entries a lone import into
// SQLite records, the killed one left nothing half-written, and running it
// again completes it.
func TestStorePostgresConcurrentIngest(t *testing.T) {
	work := t.TempDir()
	const size = 1 << 20
	ref := filepath.Join(work, "ref.jsonl")
	if _, err := conversationTranscript(ref, "00000000-0000-4000-8000-000000000000", size); err != nil {
		t.Fatal(err)
	}
	lone := runImport(t.TempDir(), ref)
	if lone.err != nil || lone.Entries == 0 {
		t.Fatalf("the reference import into SQLite: %+v", lone)
	}
	for _, n := range []int{2, 8} {
		t.Run(fmt.Sprintf("%d processes", n), func(t *testing.T) {
			pg := pgtest.URL(t)
			env := "BRIDGE_STORE=" + pg
			paths := make([]string, n)
			for i := range paths {
				paths[i] = filepath.Join(work, fmt.Sprintf("p%d-%d.jsonl", n, i))
				if _, err := conversationTranscript(paths[i], fmt.Sprintf("%08d-0000-4000-8000-%012d", n, i), size); err != nil {
					t.Fatal(err)
				}
			}
			big := filepath.Join(work, fmt.Sprintf("big%d.jsonl", n))
			if _, err := conversationTranscript(big, fmt.Sprintf("%08d-1111-4000-8000-000000000000", n), 16*size); err != nil {
				t.Fatal(err)
			}
			// The victim starts first and is killed while the others run.
			victim := exec.Command(binPath, "--data-dir", t.TempDir(), "import", "--harness", "claude-code", "--json", big)
			victim.Env = append(victim.Environ(), env)
			if err := victim.Start(); err != nil {
				t.Fatal(err)
			}
			results := make([]importResult, n)
			var wg sync.WaitGroup
			for i := range paths {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = runImport(t.TempDir(), paths[i], env)
				}()
			}
			time.Sleep(time.Second) // let it get going: a kill mid-import, not before
			_ = victim.Process.Kill()
			victimErr := victim.Wait()
			wg.Wait()

			db, err := postgres.Open(context.Background(), pg, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for i, r := range results {
				if r.err != nil {
					t.Fatalf("import %d: %v", i, r.err)
				}
				if r.Entries != lone.Entries {
					t.Errorf("import %d reported %d entries, a lone import %d", i, r.Entries, lone.Entries)
				}
				if got := len(branchOf(t, db, r.SessionID)); got != lone.Entries {
					t.Errorf("session %s of import %d holds %d entries, want %d", r.SessionID, i, got, lone.Entries)
				}
			}
			sessions, _, err := db.ListSessions(context.Background(), core.ListQuery{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if victimErr == nil {
				t.Logf("the victim finished before it was killed (machine faster than expected): its session is checked below")
			} else if len(sessions) != n {
				t.Errorf("%d sessions after the kill, want the %d finished imports (the killed one all or nothing)", len(sessions), n)
			}
			// Again, to the end: complete, and exactly once.
			again := runImport(t.TempDir(), big, env)
			if again.err != nil {
				t.Fatalf("the killed import run again: %v", again.err)
			}
			check := runImport(t.TempDir(), big)
			if check.err != nil {
				t.Fatal(check.err)
			}
			if got := len(branchOf(t, db, again.SessionID)); got != check.Entries {
				t.Errorf("the killed import, run again, holds %d entries; a lone import into SQLite %d", got, check.Entries)
			}
		})
	}
}

func branchOf(t *testing.T, db core.Store, sid string) []core.Entry {
	t.Helper()
	br, err := db.ActiveBranch(context.Background(), sid)
	if err != nil {
		t.Fatalf("session %s: %v", sid, err)
	}
	return br
}

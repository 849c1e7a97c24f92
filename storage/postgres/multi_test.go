package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// openN opens n stores on one fresh database at the same moment, each with
// a pool of its own (to PostgreSQL, n processes).
func openN(t *testing.T, url string, n int) []*postgres.DB {
	t.Helper()
	dbs := make([]*postgres.DB, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			dbs[i], errs[i] = postgres.Open(ctx, url, postgres.Options{MaxConns: 4})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d of %d at once: %v", i+1, n, err)
		}
		t.Cleanup(func() { dbs[i].Close() })
	}
	return dbs
}

// TestEightOpenAFreshDatabaseAtOnce: eight stores opening one empty
// database at the same moment all succeed, and the schema is made once
// (the advisory lock serialises the migrations).
func TestEightOpenAFreshDatabaseAtOnce(t *testing.T) {
	dbs := openN(t, pgtest.URL(t), 8)
	for _, db := range dbs {
		v, err := db.SchemaVersion(ctx)
		if err != nil || v != postgres.KnownSchemaVersion() {
			t.Fatalf("SchemaVersion = %d, %v, want %d", v, err, postgres.KnownSchemaVersion())
		}
	}
	var rows, versions int
	if err := dbs[0].Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM bridge_migrations`).Scan(&rows, &versions); err != nil {
		t.Fatal(err)
	}
	if rows != versions {
		t.Fatalf("bridge_migrations has %d rows for %d versions: a migration ran twice", rows, versions)
	}
	// Every store works on the schema.
	s, err := dbs[3].CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[5].GetSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
}

// TestWritersShareOneSessionInOrder: eight stores (processes, to the
// server) append to one session at once, and to sessions of their own.
// Nothing is lost, sequence numbers are dense, the chain is unbroken from
// the root to the head, and each writer's entries keep their order.
func TestWritersShareOneSessionInOrder(t *testing.T) {
	dbs := openN(t, pgtest.URL(t), 8)
	shared, err := dbs[0].CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	const batches, per = 15, 4
	own := make([]string, len(dbs))
	var wg sync.WaitGroup
	errs := make(chan error, len(dbs))
	for w, db := range dbs {
		s, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
		if err != nil {
			t.Fatal(err)
		}
		own[w] = s.ID
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				var es []core.NewEntry
				for i := range per {
					es = append(es, core.NewEntry{Kind: core.KindUserMessage,
						Payload: core.Payload(map[string]string{"text": fmt.Sprintf("w%d-%03d", w, b*per+i)})})
				}
				if _, err := db.Append(ctx, shared.ID, es...); err != nil {
					errs <- err
					return
				}
				if _, err := db.Append(ctx, own[w], es[:1]...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	br, err := dbs[7].ActiveBranch(ctx, shared.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(br) != len(dbs)*batches*per {
		t.Fatalf("%d entries on the branch, want %d", len(br), len(dbs)*batches*per)
	}
	last := map[string]string{}
	for i, e := range br {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
		if i > 0 && e.ParentID != br[i-1].ID {
			t.Fatalf("entry %d's parent is %s, not the entry before it", i, e.ParentID)
		}
		text := storetest.Texts([]core.Entry{e})
		w := text[:2]
		if text <= last[w] {
			t.Fatalf("writer %s's entries out of order: %s after %s", w, text, last[w])
		}
		last[w] = text
	}
	got, _ := dbs[1].GetSession(ctx, shared.ID)
	if got.HeadID != br[len(br)-1].ID {
		t.Fatalf("head %s, want the last entry %s", got.HeadID, br[len(br)-1].ID)
	}
	for w, id := range own {
		if br, err := dbs[0].ActiveBranch(ctx, id); err != nil || len(br) != batches {
			t.Fatalf("writer %d's own session: %d entries, %v", w, len(br), err)
		}
	}
	if rep, err := dbs[2].Integrity(ctx); err != nil || !rep.Clean() {
		t.Fatalf("Integrity = %+v, %v", rep, err)
	}
}

// TestNativeIDsRecordedOnceAcrossWriters: eight stores importing the same
// transcript (the same native ids) into one session at once record each
// entry once.
func TestNativeIDsRecordedOnceAcrossWriters(t *testing.T) {
	dbs := openN(t, pgtest.URL(t), 8)
	s, err := dbs[0].CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	var es []core.NewEntry
	for i := range 30 {
		es = append(es, core.NewEntry{Kind: core.KindUserMessage, NativeID: fmt.Sprintf("n%02d", i),
			Payload: core.Payload(map[string]string{"text": fmt.Sprint(i)})})
	}
	var wg sync.WaitGroup
	for _, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < len(es); i += 5 {
				if _, err := db.Append(ctx, s.ID, es[i:i+5]...); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	br, err := dbs[0].ActiveBranch(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(br) != len(es) {
		t.Fatalf("%d entries recorded, want %d (each native id once)", len(br), len(es))
	}
}

// TestPreviewClaimedOnceAcrossProcesses: of eight stores claiming one
// preview at the same moment, exactly one wins, each time.
func TestPreviewClaimedOnceAcrossProcesses(t *testing.T) {
	dbs := openN(t, pgtest.URL(t), 8)
	s, err := dbs[0].CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	for trial := range 5 {
		id := fmt.Sprintf("p_%d", trial)
		if err := dbs[0].SavePreview(ctx, core.Preview{ID: id, SourceSessionID: s.ID, Summary: "x"}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		wins, conflicts := 0, 0
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, db := range dbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := db.ClaimPreview(ctx, id, time.Now())
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case core.ErrorCode(err) == core.CodeConflict:
					conflicts++
				default:
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins != 1 || conflicts != len(dbs)-1 {
			t.Fatalf("trial %d: %d won, %d conflicted", trial, wins, conflicts)
		}
	}
}

// TestUpdateRollsBackEverywhere: a failed Update leaves nothing another
// process can see, and a committed one is seen whole.
func TestUpdateIsAllOrNothingForOthers(t *testing.T) {
	dbs := openN(t, pgtest.URL(t), 2)
	s, err := dbs[0].CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan int, 1)
	err = dbs[0].Update(ctx, func(w core.Writer) error {
		if _, err := w.Append(ctx, s.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(map[string]string{"text": "a"})}); err != nil {
			return err
		}
		br, err := dbs[1].ActiveBranch(ctx, s.ID) // another process, mid-transaction
		if err != nil {
			return err
		}
		seen <- len(br)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := <-seen; n != 0 {
		t.Fatalf("another process saw %d entries of an uncommitted Update", n)
	}
	if br, _ := dbs[1].ActiveBranch(ctx, s.ID); len(br) != 1 {
		t.Fatalf("after the commit another process sees %d entries, want 1", len(br))
	}
	_ = context.Background
}

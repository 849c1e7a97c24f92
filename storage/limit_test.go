package storage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// TestHugeEntryFailsAloneAndStoreKeepsWriting: an entry of 200 MB (beyond
// what the SQLite driver can hold per connection) fails its own call with an
// error naming the limit, and later writes still work.
func TestHugeEntryFailsAloneAndStoreKeepsWriting(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s := newSession(t, db)
	huge := core.NewEntry{Kind: core.KindUserMessage,
		Payload: []byte(`{"text":"` + strings.Repeat("x", 200<<20) + `"}`)}
	done := make(chan error, 1)
	go func() {
		done <- db.Update(ctx, func(w core.Writer) error {
			_, err := w.Append(ctx, s.ID, huge)
			return err
		})
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("a 200 MB entry wedged the store")
	}
	wantCode(t, err, core.CodeInvalid)
	if !strings.Contains(err.Error(), "limit") || len(err.Error()) > 300 {
		t.Fatalf("error should name the limit and stay short: %.300q", err)
	}
	if _, err := db.Append(ctx, s.ID, huge); core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("Append outside Update: want invalid, got %v", err)
	}
	mustAppend(t, db, s.ID, user("after"))
	h, _, err := db.History(ctx, s.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(h); got != "after" {
		t.Fatalf("history = %q, want only the entry written after the refusal", got)
	}
}

// TestDriverPanicIsRecoveredBelowTheTransaction: with the size limit lifted,
// the same 200 MB entry makes the SQLite driver run out of memory (it
// panics); the call fails with an error, the write lock is released and the
// store keeps writing.
func TestDriverPanicIsRecoveredBelowTheTransaction(t *testing.T) {
	ctx := context.Background()
	db := storagetest.OpenWith(t, storage.Options{MaxEntryBytes: -1})
	s := newSession(t, db)
	huge := core.NewEntry{Kind: core.KindUserMessage,
		Payload: []byte(`{"text":"` + strings.Repeat("x", 200<<20) + `"}`)}
	for _, name := range []string{"Update", "Append"} {
		done := make(chan error, 1)
		go func() {
			if name == "Append" {
				_, err := db.Append(ctx, s.ID, huge)
				done <- err
				return
			}
			done <- db.Update(ctx, func(w core.Writer) error {
				_, err := w.Append(ctx, s.ID, huge)
				return err
			})
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("%s: a 200 MB entry was accepted; this test needs the driver to fail on it", name)
			}
			t.Logf("%s: %v", name, err)
		case <-time.After(time.Minute):
			t.Fatalf("%s: a driver failure wedged the store", name)
		}
		mustAppend(t, db, s.ID, user("after "+name))
	}
	h, _, err := db.History(ctx, s.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(h); got != "after Update,after Append" {
		t.Fatalf("history = %q", got)
	}
	if r, err := db.Integrity(ctx); err != nil || len(r.Problems) > 0 {
		t.Fatalf("integrity after driver failure: %+v %v", r, err)
	}
}

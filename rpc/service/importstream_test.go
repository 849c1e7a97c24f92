package service_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// streamingHost is the fake harness with an importer that hands out
// batches of user messages and can fail or be cancelled partway.
type streamingHost struct {
	*fake.Host
	batches  int
	failAt   int                // batch (1-based) before which the read fails; 0: never
	badAt    int                // batch whose last entry the store refuses; 0: none
	cancel   context.CancelFunc // called before batch failAt instead of failing, when set
	handed   int                // batches the sink accepted
	lastSink error
}

func (h *streamingHost) ImportStream(ctx context.Context, path string, sink core.ImportSink, progress func(done, total int64)) (core.ImportedSession, error) {
	head := core.ImportedSession{NativeID: "native-1", Title: "streamed"}
	for b := 1; b <= h.batches; b++ {
		if b == h.failAt {
			if h.cancel != nil {
				h.cancel()
				if err := ctx.Err(); err != nil {
					return core.ImportedSession{}, core.E(core.CodeCancelled, "test import", err)
				}
			}
			return core.ImportedSession{}, core.Errorf(core.CodeHarness, "read error before batch %d", b)
		}
		part := head
		for i := 0; i < core.ImportBatch; i++ {
			e := core.NewEntry{Kind: core.KindUserMessage, NativeID: fmt.Sprintf("m-%d-%d", b, i),
				Payload: core.Payload(map[string]any{"text": "hello"})}
			if b == h.badAt && i == core.ImportBatch-1 {
				e.Payload = []byte(`{"no":"text"}`)
			}
			part.Entries = append(part.Entries, e)
		}
		if h.lastSink = sink(part); h.lastSink != nil {
			return core.ImportedSession{}, h.lastSink
		}
		h.handed++
	}
	return head, nil
}

var _ core.Importer = (*streamingHost)(nil)

// TestImportStreamAllOrNothing: the service records a streamed import in
// one transaction. A read error after three batches were written, a
// cancellation partway, and an entry the store refuses in the second batch
// all leave no session; on the refused entry the importer is stopped at its
// next batch instead of reading on; a complete import then records every
// entry, and again adds nothing.
func TestImportStreamAllOrNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		path := filepath.Join(t.TempDir(), "t.jsonl")
		if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var h *streamingHost
		r := newRig(t, rigOptions{open: open, wrap: func(f *fake.Host) core.BridgeHost {
			h = &streamingHost{Host: f}
			return h
		}})
		ctx := context.Background()
		noSessions := func(what string) {
			t.Helper()
			list, _, err := r.db.ListSessions(ctx, core.ListQuery{IncludeArchived: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 0 {
				t.Fatalf("%s left %d session(s)", what, len(list))
			}
		}
		imp := func(ctx context.Context) (schema.SessionImportResult, error) {
			return r.svc.SessionImport(ctx, schema.SessionImportParams{Harness: "fake", Path: path})
		}

		h.batches, h.failAt = 6, 4
		if _, err := imp(ctx); core.ErrorCode(err) != core.CodeHarness {
			t.Fatalf("import failing after 3 batches: %v", err)
		}
		noSessions("a read error after 3 written batches")

		cctx, cancel := context.WithCancel(ctx)
		h.handed, h.cancel = 0, cancel
		if _, err := imp(cctx); core.ErrorCode(err) != core.CodeCancelled {
			t.Fatalf("cancelled import: %v", err)
		}
		noSessions("a cancelled import")

		h.handed, h.cancel, h.failAt, h.badAt, h.batches = 0, nil, 0, 2, 10
		if _, err := imp(ctx); core.ErrorCode(err) != core.CodeInvalid {
			t.Fatalf("import with a refused entry: %v", err)
		}
		noSessions("an import with a refused entry")
		if h.handed >= h.batches {
			t.Errorf("the importer handed all %d batches although batch 2 was refused", h.handed)
		}

		h.handed, h.badAt = 0, 0
		out, err := imp(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := h.batches * core.ImportBatch; out.Entries != want {
			t.Errorf("imported %d entries, want %d", out.Entries, want)
		}
		again, err := imp(ctx)
		if err != nil || again.Entries != 0 || again.SessionID != out.SessionID {
			t.Errorf("second import: %+v %v, want 0 entries added to %s", again, err, out.SessionID)
		}
		s, err := r.db.GetSession(ctx, out.SessionID)
		if err != nil || s.Title != "streamed" || s.NativeSessionID != "native-1" {
			t.Errorf("session %+v (%v)", s, err)
		}
	})
}

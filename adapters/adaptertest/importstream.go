package adaptertest

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// CheckImportStreams imports path through imp's ImportStream and checks
// that it streams: the sink gets more than one batch, none larger than
// core.ImportBatch, every batch with the same session id, and at least one
// progress report of a file not yet fully read comes after the first batch
// (reading goes on after entries were handed out, rather than the whole
// transcript being read first). It returns the entries' count.
func CheckImportStreams(t *testing.T, imp core.Importer, path string) int {
	t.Helper()
	var batches, entries int
	var native string
	readAfterBatch := false
	_, err := imp.ImportStream(context.Background(), path, func(part core.ImportedSession) error {
		if len(part.Entries) > core.ImportBatch {
			t.Errorf("batch %d holds %d entries, over core.ImportBatch (%d)", batches+1, len(part.Entries), core.ImportBatch)
		}
		if batches == 0 {
			native = part.NativeID
		} else if part.NativeID != native {
			t.Errorf("batch %d names session %q, the first named %q", batches+1, part.NativeID, native)
		}
		batches++
		entries += len(part.Entries)
		return nil
	}, func(done, total int64) {
		if batches > 0 && done < total {
			readAfterBatch = true
		}
	})
	if err != nil {
		t.Fatalf("ImportStream: %v", err)
	}
	if batches < 2 {
		t.Errorf("%d entries came in %d batch(es): the import did not stream", entries, batches)
	}
	if !readAfterBatch {
		t.Errorf("no progress of a file still being read after the first batch: the transcript was read whole first")
	}
	return entries
}

// WriteTranscript creates name in a fresh temporary folder, fills it through
// a buffered writer with write, and returns its path. A failed write, flush
// or close fails the test.
func WriteTranscript(t testing.TB, name string, write func(w *bufio.Writer)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	write(w)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

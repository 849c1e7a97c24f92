package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/campaign"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
)

// mutate returns a damaged copy of b: truncated, bytes flipped, a line
// deleted, duplicated or swapped, a garbage or NUL line inserted.
func mutate(rng *rand.Rand, b []byte) []byte {
	out := append([]byte(nil), b...)
	lines := bytes.SplitAfter(out, []byte("\n"))
	switch rng.IntN(7) {
	case 0:
		return out[:rng.IntN(len(out)+1)]
	case 1:
		for range 1 + rng.IntN(8) {
			out[rng.IntN(len(out))] ^= byte(1 + rng.IntN(255))
		}
		return out
	case 2:
		i := rng.IntN(len(lines))
		lines = append(lines[:i], lines[i+1:]...)
	case 3:
		i := rng.IntN(len(lines))
		lines = append(lines[:i+1], lines[i:]...)
	case 4:
		i, j := rng.IntN(len(lines)), rng.IntN(len(lines))
		lines[i], lines[j] = lines[j], lines[i]
	case 5:
		i := rng.IntN(len(lines) + 1)
		lines = append(lines[:i], append([][]byte{[]byte("{\"type\":\x00garbage\xff}\n")}, lines[i:]...)...)
	case 6:
		i := rng.IntN(len(lines))
		if l := lines[i]; len(l) > 2 {
			lines[i] = l[:rng.IntN(len(l))]
		}
	}
	return bytes.Join(lines, nil)
}

// TestImportMutatedTranscripts: every importer, given damaged copies of a
// recorded transcript of its harness (60 per importer; 2,000 with
// BRIDGE_CAMPAIGN=nightly), never panics; it refuses with a clear error
// (never an internal one), or returns entries the record accepts, which are
// then recorded, and importing the same bytes again adds nothing.
func TestImportMutatedTranscripts(t *testing.T) {
	root := filepath.Join("..", "..", "testdata")
	files := map[string]string{
		"claude-code": "claude-code/transcript-with-compact-boundary.recorded.jsonl",
		"codex":       "codex/rollout-manual-compact.recorded.jsonl",
		"opencode":    "opencode/export-after-summarize.recorded.json",
		"dsh":         "dsh/web-rpc.session.jsonl",
	}
	dir := t.TempDir()
	t.Setenv("BRIDGE_DSH_URL", "http://127.0.0.1:9/api")
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(dir, DatabaseFile), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := store{dir: dir, db: db}
	a := &app{}
	e, err := a.build(st, openOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	trials := campaign.Count(60, 2000)
	rng := rand.New(rand.NewPCG(5, 6))
	for harness, file := range files {
		orig, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		refused, imported := 0, 0
		for trial := 0; trial < trials; trial++ {
			b := mutate(rng, orig)
			path := filepath.Join(t.TempDir(), filepath.Base(file))
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			var first, again int
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Fatalf("%s importer panicked on a mutated transcript: %v", harness, v)
					}
				}()
				out, err := e.svc.SessionImport(ctx, schema.SessionImportParams{Harness: harness, Path: path})
				if err != nil {
					if c := core.ErrorCode(err); c == core.CodeInternal {
						t.Fatalf("%s importer: internal error on a mutated transcript: %v", harness, err)
					}
					refused++
					return
				}
				imported++
				first = out.Entries
				out2, err := e.svc.SessionImport(ctx, schema.SessionImportParams{Harness: harness, Path: path})
				if err != nil {
					t.Fatalf("%s: re-import of the same bytes failed: %v", harness, err)
				}
				again = out2.Entries
			}()
			if again != 0 {
				t.Fatalf("%s: re-importing the same mutated bytes added %d entries (first import added %d)", harness, again, first)
			}
		}
		t.Logf("%s: %d mutated transcripts refused, %d imported", harness, refused, imported)
		if imported == 0 {
			t.Errorf("%s: no mutated transcript was importable; the mutations are too harsh to test recovery", harness)
		}
	}
	if rep, err := db.Integrity(ctx); err != nil || !rep.Clean() {
		t.Fatalf("integrity after the mutated imports: %+v %v", rep, err)
	}
}

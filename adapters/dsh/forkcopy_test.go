package dsh_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/adapters/dsh"
)

// lastTurnEnd is the seq of the last turn/end among the whole lines of
// text (-1: none).
func lastTurnEnd(t *testing.T, text []byte) int64 {
	t.Helper()
	ended := int64(-1)
	if i := bytes.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i+1]
	} else {
		return -1
	}
	for _, line := range bytes.Split(bytes.TrimRight(text, "\n"), []byte("\n")) {
		var ev dsh.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("recorded line: %v", err)
		}
		if ev.Type == "turn/end" {
			ended = ev.First()
		}
	}
	return ended
}

// TestLogCopyTakesWholeFramesOnly: the fork server's copy of a live log
// holds its whole zstd frames and not one DSH is still writing, reports the
// last completed turn among them, takes the frames the log gained at the
// next update (the copy then equals the log), and copies a log DSH
// replaced whole.
func TestLogCopyTakesWholeFramesOnly(t *testing.T) {
	dir := t.TempDir()
	chunks := frameChunks(t)
	full := filepath.Join(dir, "full.zstd")
	offsets := writeFrames(t, full, chunks)
	all, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "live", "session.jsonl.zstd")
	dst := filepath.Join(dir, "fork", "sessions", "p", "s", "session.jsonl.zstd")
	if err := os.MkdirAll(filepath.Dir(src), 0o700); err != nil {
		t.Fatal(err)
	}
	c := dsh.NewLogCopy(src, dst)
	ctx := context.Background()
	step := func(name string, srcBytes []byte, whole int, wantText []byte) {
		t.Helper()
		if err := os.WriteFile(src, srcBytes, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := c.Update(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		copied, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(copied, srcBytes[:whole]) {
			t.Errorf("%s: the copy holds %d bytes, want the %d of the whole frames", name, len(copied), whole)
		}
		if want := lastTurnEnd(t, wantText); got != want {
			t.Errorf("%s: last turn/end %d, want %d", name, got, want)
		}
		if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: the copy's mode %v (%v), want 0600", name, fi.Mode(), err)
		}
	}
	// Three whole frames and the half DSH is writing of the fourth.
	step("torn fourth frame", all[:offsets[3]+(offsets[4]-offsets[3])/2], offsets[3], bytes.Join(chunks[:3], nil))
	// The fourth and fifth are written: both are taken.
	step("two more frames", all[:offsets[5]], offsets[5], bytes.Join(chunks[:5], nil))
	// Nothing new: the same.
	step("unchanged", all[:offsets[5]], offsets[5], bytes.Join(chunks[:5], nil))
	// DSH replaced the log with a shorter one: copied whole again.
	if err := os.Remove(src); err != nil {
		t.Fatal(err)
	}
	step("replaced", all[:offsets[2]], offsets[2], bytes.Join(chunks[:2], nil))
	step("all", all, len(all), bytes.Join(chunks, nil))
	if n, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".copy-*")); len(n) > 0 {
		t.Errorf("temporary files left: %v", n)
	}
}

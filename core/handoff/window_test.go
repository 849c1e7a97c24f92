package handoff_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/handoff"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// TestReadWindow: only the newest 240 messages are read, and the latest
// checkpoint's summary is put in front when it is older than the window.
func TestReadWindow(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := db.Append(ctx, s.ID, core.NewEntry{Kind: core.KindCheckpoint, Payload: core.Payload(map[string]any{"summary": "OLD SUMMARY"})})
	if err != nil {
		t.Fatal(err)
	}
	var batch []core.NewEntry
	for i := 0; i < 300; i++ {
		batch = append(batch, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(map[string]any{"text": fmt.Sprintf("u%d", i)})})
	}
	if _, err := db.Append(ctx, s.ID, batch...); err != nil {
		t.Fatal(err)
	}
	s.LatestCheckpointID = cp[0].ID
	w, more, err := handoff.ReadWindow(ctx, db, s)
	if err != nil {
		t.Fatal(err)
	}
	if !more || len(w) != 241 || w[0].ID != cp[0].ID {
		t.Fatalf("window of %d entries, more %v, first %s", len(w), more, w[0].Kind)
	}
	src := handoff.Fold(w, handoff.FoldOptions{MoreBefore: more})
	if !strings.Contains(src.Text, "OLD SUMMARY") || !strings.Contains(src.Text, "u299") || strings.Contains(src.Text, "u59\n") {
		t.Fatalf("fold of the window:\n%.300s", src.Text)
	}
	if len(src.Dropped) == 0 || !strings.Contains(strings.Join(src.Dropped, ";"), "older than the newest 240") {
		t.Fatalf("dropped %v", src.Dropped)
	}
}

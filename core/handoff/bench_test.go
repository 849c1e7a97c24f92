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

// BenchmarkReadAndFold6000 reads the active branch of a 6,000-message
// session from SQLite and folds it (upstream's figure: 6.7 ms median with
// its single-read window). The fold alone is reported separately.
func BenchmarkReadAndFold6000(b *testing.B) {
	ctx := context.Background()
	db := storagetest.Open(b)
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/tmp"})
	if err != nil {
		b.Fatal(err)
	}
	var batch []core.NewEntry
	for i := 0; i < 6000; i++ {
		kind := core.KindUserMessage
		if i%2 == 1 {
			kind = core.KindAssistantMessage
		}
		text := fmt.Sprintf("message %d about src/file%d.go: %s", i, i%50, strings.Repeat("words and numbers 42 ", 10))
		batch = append(batch, core.NewEntry{Kind: kind, Payload: core.Payload(map[string]any{"text": text})})
		if len(batch) == 500 {
			if _, err := db.Append(ctx, s.ID, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.Run("read+fold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			window, more, err := handoff.ReadWindow(ctx, db, s)
			if err != nil {
				b.Fatal(err)
			}
			if src := handoff.Fold(window, handoff.FoldOptions{MoreBefore: more}); src.Stats.MessagesRead != 240 {
				b.Fatalf("read %d messages", src.Stats.MessagesRead)
			}
		}
	})
	b.Run("read-whole-branch+fold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			branch, err := db.ActiveBranch(ctx, s.ID)
			if err != nil {
				b.Fatal(err)
			}
			handoff.Fold(branch, handoff.FoldOptions{})
		}
	})
	branch, err := db.ActiveBranch(ctx, s.ID)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			handoff.Fold(branch, handoff.FoldOptions{})
		}
	})
}

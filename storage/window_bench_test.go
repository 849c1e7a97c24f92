package storage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// BenchmarkWindowAppend appends one entry at a time to a session whose
// summary holds 0 or 5,000 distinct files since its last boundary: a
// message (the summary row only) and an artifact.created of a new file
// (the evidence list is read to de-duplicate).
//
//	go test ./storage -run '^$' -bench WindowAppend -benchtime 2000x -count 3
func BenchmarkWindowAppend(b *testing.B) {
	ctx := context.Background()
	for _, files := range []int{0, 5000} {
		for _, kind := range []string{"message", "artifact"} {
			b.Run(fmt.Sprintf("files=%d/%s", files, kind), func(b *testing.B) {
				db := openBench(b)
				s := newSession(b, db)
				var batch []core.NewEntry
				for i := 0; i < files; i++ {
					batch = append(batch, core.NewEntry{Kind: core.KindArtifactCreated,
						Payload: core.Payload(map[string]string{"path": fmt.Sprintf("src/some/longer/path/file%05d.go", i)})})
				}
				if len(batch) > 0 {
					mustAppend(b, db, s.ID, batch...)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					e := assistant("hello")
					if kind == "artifact" {
						e = core.NewEntry{Kind: core.KindArtifactCreated, Payload: core.Payload(map[string]string{"path": fmt.Sprintf("new/%d.go", i)})}
					}
					if _, err := db.Append(ctx, s.ID, e); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

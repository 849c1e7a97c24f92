package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// BenchmarkFollowIdleLook is the cost of one look of an idle follower (no
// commit since the last): "query" reads the entries past the last rowid,
// as every look did before; "data_version" asks SQLite's change counter,
// as a look does now when nothing changed. Ratios within one run:
//
//	go test -run '^$' -bench FollowIdleLook -count 6 ./storage | benchstat -col /look -
func BenchmarkFollowIdleLook(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "bridge.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		es := make([]core.NewEntry, 1000)
		for j := range es {
			es[j] = core.NewEntry{Kind: core.KindUserMessage, Payload: []byte(fmt.Sprintf(`{"text":"entry %d %d"}`, i, j))}
		}
		if _, err := db.Append(ctx, s.ID, es...); err != nil {
			b.Fatal(err)
		}
	}
	var last int64
	if err := db.SQL().QueryRow(`SELECT max(rowid) FROM entries`).Scan(&last); err != nil {
		b.Fatal(err)
	}
	b.Run("look=query", func(b *testing.B) {
		for b.Loop() {
			if _, n, err := db.handOver(ctx, last, func([]core.Entry) {}); err != nil || n != 0 {
				b.Fatalf("read %d entries, %v", n, err)
			}
		}
	})
	b.Run("look=data_version", func(b *testing.B) {
		w := db.newVersionWatch()
		defer w.close()
		w.changed(ctx)
		for b.Loop() {
			if w.changed(ctx) {
				b.Fatal("the file changed")
			}
		}
	})
}

package storage_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// BenchmarkUpdateBulk measures the record's side of an import: one
// UpdateBulk appending bulkEntries entries (of about 500 bytes of text,
// with native ids, in batches of core.ImportBatch), into a new session of a
// fresh database, until UpdateBulk returns ("index": the entries are
// indexed for search while it runs and committed with it; "noindex":
// without the search index, the writer alone). ns/entry is the wall-clock
// figure, cpu-ns/entry the process's CPU time (every thread, user and
// system) over the same spans: on a shared machine the steadier one.
func BenchmarkUpdateBulk(b *testing.B) {
	const bulkEntries = 20000
	words := strings.Fields("the listener binds before the config is read so the port flag is ignored; " +
		"move the bind after parsing, keep the default, and add a test that starts the server on a free port")
	es := make([]core.NewEntry, bulkEntries)
	for i := range es {
		var t strings.Builder
		for j := 0; t.Len() < 120+(i*37)%700; j++ {
			t.WriteString(words[(i+j)%len(words)])
			t.WriteByte(' ')
		}
		if i%2 == 0 {
			es[i] = user(t.String())
		} else {
			es[i] = assistant(t.String())
		}
		es[i].NativeID = fmt.Sprintf("77777777-5436-4b34-8ea1-%012d", i)
	}
	for _, index := range []bool{true, false} {
		name := "index"
		if !index {
			name = "noindex"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				db, err := storage.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), storage.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if !index {
					storage.DisableSearchIndex(db)
				}
				s := newSession(b, db)
				c0 := cpuTime()
				b.StartTimer()
				err = db.UpdateBulk(ctx, func(w core.Writer) error {
					for k := 0; k < len(es); k += core.ImportBatch {
						if _, err := w.Append(ctx, s.ID, es[k:min(k+core.ImportBatch, len(es))]...); err != nil {
							return err
						}
					}
					return nil
				})
				b.StopTimer()
				cpu += cpuTime() - c0
				if err != nil {
					b.Fatal(err)
				}
				db.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bulkEntries), "ns/entry")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*bulkEntries), "cpu-ns/entry")
		})
	}
}

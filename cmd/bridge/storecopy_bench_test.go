package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// BenchmarkStoreCopy1M copies a SQLite record of 1,000,000 entries
// (BRIDGE_BENCH_COPY_ENTRIES; 10 sessions of turns: a user message, a tool
// call and its output, an answer) to PostgreSQL and back with `bridge store
// copy`, beside a SQLite → SQLite copy of the same record as the baseline,
// and checks that every session's export is byte for byte the same after
// the round trip. Run it alone (-run '^$' -bench StoreCopy1M -benchtime 1x).
func BenchmarkStoreCopy1M(b *testing.B) {
	total := 1_000_000
	if v := os.Getenv("BRIDGE_BENCH_COPY_ENTRIES"); v != "" {
		total, _ = strconv.Atoi(v)
	}
	const sessions = 10
	work := b.TempDir()
	src := filepath.Join(work, "src")
	os.Mkdir(src, 0o700)
	ids := seedBulk(b, filepath.Join(src, DatabaseFile), sessions, total/sessions)
	pg := pgtest.URL(b)
	copyTimed := func(from, to string) time.Duration {
		t0 := time.Now()
		cmd := exec.Command(binPath, "store", "copy", "--from", from, "--to", to, "--json")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("store copy: %v: %s", err, out)
		}
		return time.Since(t0)
	}
	for range b.N {
		sq := filepath.Join(work, fmt.Sprintf("sqlite-%d", time.Now().UnixNano()))
		back := filepath.Join(work, fmt.Sprintf("back-%d", time.Now().UnixNano()))
		os.Mkdir(sq, 0o700)
		os.Mkdir(back, 0o700)
		base := copyTimed(src, sq)
		toPG := copyTimed(src, pg)
		fromPG := copyTimed(pg, back)
		again := copyTimed(src, pg)
		rate := func(d time.Duration) float64 { return float64(total) / d.Seconds() }
		b.ReportMetric(rate(base), "sqlite→sqlite-entries/s")
		b.ReportMetric(rate(toPG), "sqlite→pg-entries/s")
		b.ReportMetric(rate(fromPG), "pg→sqlite-entries/s")
		b.ReportMetric(toPG.Seconds()/base.Seconds(), "to-pg/baseline")
		b.ReportMetric(fromPG.Seconds()/base.Seconds(), "from-pg/baseline")
		b.ReportMetric(again.Seconds(), "second-run-s")
		b.StopTimer()
		for _, id := range ids {
			if a, c := exportHash(b, src, id), exportHash(b, back, id); a != c {
				b.Fatalf("session %s: the export after SQLite → PostgreSQL → SQLite differs", id)
			}
		}
		b.StartTimer()
	}
}

// exportHash is the SHA-256 of `bridge export --format json` of a session.
func exportHash(b *testing.B, dir, sid string) string {
	out, err := exec.Command(binPath, "--data-dir", dir, "export", sid, "--format", "json").Output()
	if err != nil {
		b.Fatalf("export %s: %v", sid, err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(out))
}

// seedBulk writes n sessions of per entries each into a new SQLite record
// through the store's bulk transaction, and returns their ids.
func seedBulk(b *testing.B, path string, n, per int) []string {
	ctx := context.Background()
	db, err := storage.Open(ctx, path, storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	words := strings.Fields("the listener binds before the config is read so the port flag is ignored move the bind after parsing keep the default and add a test")
	text := func(i, l int) string {
		var sb strings.Builder
		for j := 0; sb.Len() < l; j++ {
			sb.WriteString(words[(i*7+j)%len(words)])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	var ids []string
	for s := range n {
		sess, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/w", Title: fmt.Sprintf("bulk %d", s)})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, sess.ID)
		err = db.UpdateBulk(ctx, func(w core.Writer) error {
			for i := 0; i < per; i += 1000 {
				batch := make([]core.NewEntry, 0, 1000)
				for j := i; j < min(i+1000, per); j++ {
					var e core.NewEntry
					switch j % 4 {
					case 0:
						e = core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(map[string]any{"text": text(j, 80)})}
					case 1:
						e = core.NewEntry{Kind: core.KindToolStarted, Payload: core.Payload(map[string]any{"toolId": fmt.Sprintf("t%d", j), "name": "Bash", "input": map[string]string{"command": "go test ./..."}})}
					case 2:
						e = core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]any{"toolId": fmt.Sprintf("t%d", j-1), "output": text(j, 200)})}
					default:
						e = core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(map[string]any{"text": text(j, 120)})}
					}
					batch = append(batch, e)
				}
				if _, err := w.Append(ctx, sess.ID, batch...); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

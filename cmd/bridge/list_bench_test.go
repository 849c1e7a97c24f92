package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// cliRun runs the built bridge with args, output discarded, and returns its
// wall time and the CPU time (user + system) the process used.
func cliRun(b *testing.B, args ...string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("bridge %v: %v", args, err)
	}
	wall = time.Since(t0)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchDataDir makes a data directory whose record fill writes.
func benchDataDir(b *testing.B, fill func(ctx context.Context, db *storage.DB) error) string {
	b.Helper()
	dir := b.TempDir()
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(dir, DatabaseFile), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := fill(ctx, db); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkCLISessions runs `bridge sessions` as a user does, one process
// each, on data directories of 0, 100 and 10,000 sessions (two entries
// each), in turn in every iteration. It reports the medians: wall and CPU
// time per run, per session listed, and per session beyond the empty
// listing (the process start and the database open); per-session ratios
// compare 10,000 sessions with 100 (goal ≤ 1.5×).
func BenchmarkCLISessions(b *testing.B) {
	sizes := []int{0, 100, 10_000}
	dirs := map[int]string{}
	for _, n := range sizes {
		dirs[n] = benchDataDir(b, func(ctx context.Context, db *storage.DB) error {
			base := time.Now().Add(-time.Hour)
			return db.Update(ctx, func(w core.Writer) error {
				for i := 0; i < n; i++ {
					s, err := w.CreateSession(ctx, core.Session{Harness: "claude-code", Cwd: "/w", Title: "session " + strconv.Itoa(i),
						UpdatedAt: base.Add(time.Duration(i) * time.Millisecond)})
					if err != nil {
						return err
					}
					if _, err := w.Append(ctx, s.ID,
						core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(map[string]string{"text": "hello"})},
						core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(map[string]string{"text": "hi there"})}); err != nil {
						return err
					}
				}
				return nil
			})
		})
		cliRun(b, "sessions", "--data-dir", dirs[n]) // warm: first open, page cache
	}
	wall := map[int][]time.Duration{}
	cpu := map[int][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, n := range sizes {
			w, c := cliRun(b, "sessions", "--data-dir", dirs[n])
			wall[n], cpu[n] = append(wall[n], w), append(cpu[n], c)
		}
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		t    map[int][]time.Duration
	}{{"wall", wall}, {"cpu", cpu}} {
		med := map[int]float64{}
		for _, n := range sizes {
			med[n] = float64(median(m.t[n]))
		}
		b.ReportMetric(med[0]/1e6, m.name+"-ms-empty")
		b.ReportMetric(med[100]/1e6, m.name+"-ms-100")
		b.ReportMetric(med[10_000]/1e6, m.name+"-ms-10000")
		b.ReportMetric((med[10_000]/10_000)/(med[100]/100), m.name+"-per-session-10000/100")
		b.ReportMetric((med[100]-med[0])/100/1e3, m.name+"-us/session-beyond-empty-100")
		b.ReportMetric((med[10_000]-med[0])/10_000/1e3, m.name+"-us/session-beyond-empty-10000")
	}
}

// BenchmarkCLIBranchedHistory runs `bridge history` as a user does on a
// branched session of 120,000 entries (the active branch forks off near
// its root): a 60-message page at the head and one 50,000 entries back, in
// turn in every iteration. It reports the medians of wall and CPU time and
// their ratio (goal ≤ 1.5×).
func BenchmarkCLIBranchedHistory(b *testing.B) {
	var sid string
	var headSeq int64
	dir := benchDataDir(b, func(ctx context.Context, db *storage.DB) error {
		s, err := db.CreateSession(ctx, core.Session{Harness: "claude-code", Cwd: "/w", Title: "branched"})
		if err != nil {
			return err
		}
		sid = s.ID
		p := func(k core.Kind, m map[string]any) core.NewEntry {
			return core.NewEntry{Kind: k, Payload: core.Payload(m)}
		}
		pattern := []core.NewEntry{p(core.KindUserMessage, map[string]any{"text": "question"}),
			p(core.KindToolStarted, map[string]any{"toolId": "t1"}), p(core.KindToolCompleted, map[string]any{"toolId": "t1"}),
			p(core.KindContextUsage, map[string]any{"used": 1000}), p(core.KindAssistantMessage, map[string]any{"text": "answer"})}
		chunk := make([]core.NewEntry, 0, 1000)
		for len(chunk) < cap(chunk) {
			chunk = append(chunk, pattern...)
		}
		first, err := db.Append(ctx, sid, chunk...)
		if err != nil {
			return err
		}
		if _, err := db.AppendTo(ctx, sid, first[9].ID, chunk...); err != nil {
			return err
		}
		var last []core.Entry
		for n := 2000; n < 120_000; n += len(chunk) {
			if last, err = db.Append(ctx, sid, chunk...); err != nil {
				return err
			}
		}
		headSeq = last[len(last)-1].Seq
		return nil
	})
	head := []string{"history", sid, "--data-dir", dir, "--max", "60"}
	back := append(slices.Clone(head), "--before", fmt.Sprint(headSeq-50_000))
	cliRun(b, head...) // warm
	var wallHead, wallBack, cpuHead, cpuBack []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, c := cliRun(b, head...)
		wallHead, cpuHead = append(wallHead, w), append(cpuHead, c)
		w, c = cliRun(b, back...)
		wallBack, cpuBack = append(wallBack, w), append(cpuBack, c)
	}
	b.StopTimer()
	b.ReportMetric(float64(median(wallHead))/1e6, "wall-ms-head")
	b.ReportMetric(float64(median(wallBack))/1e6, "wall-ms-50000-back")
	b.ReportMetric(float64(median(wallBack))/float64(median(wallHead)), "wall-back/head")
	b.ReportMetric(float64(median(cpuHead))/1e6, "cpu-ms-head")
	b.ReportMetric(float64(median(cpuBack))/1e6, "cpu-ms-50000-back")
	b.ReportMetric(float64(median(cpuBack))/float64(median(cpuHead)), "cpu-back/head")
}

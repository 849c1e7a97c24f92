package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// benchMB reads a size in megabytes from the environment.
func benchMB(name string, def int) int64 {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return int64(v)
	}
	return int64(def)
}

// BenchmarkImportVsJq measures `bridge import` of a conversation-heavy
// Claude Code transcript (conversationTranscript, BRIDGE_BENCH_IMPORT_MB
// megabytes, default 200) against `jq -c .` of the same file, in turns in
// the same run: import/jq is the ratio of their throughputs (goal ≥ 1.5).
// Each import goes into a fresh data directory; peak-RSS-MiB is the import
// process's peak resident memory. jq must be installed.
func BenchmarkImportVsJq(b *testing.B) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		b.Fatal("jq is not installed (apt-get install jq): BenchmarkImportVsJq compares bridge import with jq -c .")
	}
	mb := benchMB("BRIDGE_BENCH_IMPORT_MB", 200)
	path := filepath.Join(b.TempDir(), "conversation.jsonl")
	if _, err := conversationTranscript(path, "77777777-5436-4b34-8ea1-4bd239b73459", mb<<20); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	var jqT, impT time.Duration
	var peak int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		cmd := exec.Command(jq, "-c", ".", path)
		cmd.Stdout = nil // discarded
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		jqT += time.Since(t0)
		dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
		r := runImport(dir, path)
		if r.err != nil {
			b.Fatal(r.err)
		}
		impT += r.took
		peak = max(peak, r.peakKiB)
		os.RemoveAll(dir)
	}
	b.StopTimer()
	size := float64(st.Size()) / (1 << 20) * float64(b.N)
	b.ReportMetric(size/jqT.Seconds(), "jq-MB/s")
	b.ReportMetric(size/impT.Seconds(), "import-MB/s")
	b.ReportMetric(jqT.Seconds()/impT.Seconds(), "import/jq")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
}

// BenchmarkImportPeakRSS imports a BRIDGE_BENCH_IMPORT_SMALL_MB (default
// 20) and a BRIDGE_BENCH_IMPORT_MB (default 200) megabyte conversation
// transcript, each with its own `bridge import` process, in turns, and
// reports their peak resident memory and its ratio (goal ≤ 1.2).
func BenchmarkImportPeakRSS(b *testing.B) {
	smallMB, bigMB := benchMB("BRIDGE_BENCH_IMPORT_SMALL_MB", 20), benchMB("BRIDGE_BENCH_IMPORT_MB", 200)
	dir := b.TempDir()
	small, big := filepath.Join(dir, "small.jsonl"), filepath.Join(dir, "big.jsonl")
	if _, err := conversationTranscript(small, "88888888-5436-4b34-8ea1-4bd239b73459", smallMB<<20); err != nil {
		b.Fatal(err)
	}
	if _, err := conversationTranscript(big, "99999999-5436-4b34-8ea1-4bd239b73459", bigMB<<20); err != nil {
		b.Fatal(err)
	}
	var ps, pb int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, c := range []struct {
			path string
			peak *int64
		}{{small, &ps}, {big, &pb}} {
			d := filepath.Join(dir, "d"+strconv.Itoa(i))
			r := runImport(d, c.path)
			if r.err != nil {
				b.Fatal(r.err)
			}
			*c.peak = max(*c.peak, r.peakKiB)
			os.RemoveAll(d)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(ps)/1024, "small-peak-MiB")
	b.ReportMetric(float64(pb)/1024, "big-peak-MiB")
	b.ReportMetric(float64(pb)/float64(ps), "big/small")
}

// procStatus reads a VmRSS/VmHWM-style line (in KiB) of a process.
func procStatus(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

// BenchmarkServeImportWAL: a running `bridge serve` imports a
// BRIDGE_BENCH_IMPORT_MB (default 200) megabyte transcript over
// session/import; once writing has paused (1 s later) it reports the
// write-ahead log's size (goal ≤ 64 MB) beside the database's and the
// search index's log, and the sidecar's resident memory before, at its
// peak, and after.
func BenchmarkServeImportWAL(b *testing.B) {
	mb := benchMB("BRIDGE_BENCH_IMPORT_MB", 200)
	path := filepath.Join(b.TempDir(), "conversation.jsonl")
	if _, err := conversationTranscript(path, "aaaaaaaa-5436-4b34-8ea1-4bd239b73459", mb<<20); err != nil {
		b.Fatal(err)
	}
	var wal, swal, db, before, peak, after int64
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
		c := startBridge(b, dir)
		c.initialize(nil)
		pid := c.cmd.Process.Pid
		before = procStatus(pid, "VmRSS")
		rpctest.Must(c.Client, c.SessionImport, schema.SessionImportParams{Harness: "claude-code", Path: path})
		time.Sleep(time.Second)
		wal = walSize(dir)
		if st, err := os.Stat(filepath.Join(dir, "bridge.db-search-wal")); err == nil {
			swal = st.Size()
		}
		st, _ := os.Stat(filepath.Join(dir, "bridge.db"))
		db = st.Size()
		peak, after = procStatus(pid, "VmHWM"), procStatus(pid, "VmRSS")
	}
	b.ReportMetric(float64(wal)/(1<<20), "wal-MB")
	b.ReportMetric(float64(swal)/(1<<20), "search-wal-MB")
	b.ReportMetric(float64(db)/(1<<20), "db-MB")
	b.ReportMetric(float64(before)/1024, "rss-before-MiB")
	b.ReportMetric(float64(peak)/1024, "rss-peak-MiB")
	b.ReportMetric(float64(after)/1024, "rss-after-MiB")
}

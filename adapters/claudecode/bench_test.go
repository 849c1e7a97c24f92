package claudecode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// benchEvents runs turns of 10,000 stream-json lines from the fake
// `claude` (this test binary); each line carries the time it was written,
// and the sink records how long after that it received the entry.
func benchEvents(b *testing.B, paceMicros int) {
	const perTurn = 10000
	ctx := context.Background()
	lat := make([]time.Duration, 0, perTurn)
	sink := func(ev core.Event) {
		now := time.Now().UnixNano()
		if ev.Entry == nil || ev.Entry.Kind != core.KindAssistantMessage {
			return
		}
		var p struct {
			Text string `json:"text"`
		}
		json.Unmarshal(ev.Entry.Payload, &p)
		if sent, err := strconv.ParseInt(p.Text, 10, 64); err == nil {
			lat = append(lat, time.Duration(now-sent))
		}
	}
	cfg := fakeCommand(b, "bench", "CLAUDECODE_FAKE_N="+strconv.Itoa(perTurn), "CLAUDECODE_FAKE_PACE_US="+strconv.Itoa(paceMicros))
	l, err := New(cfg).CreateSession(ctx, core.CreateRequest{Cwd: b.TempDir()}, sink)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	var all []time.Duration
	b.ResetTimer()
	for range b.N {
		lat = lat[:0]
		if _, err := l.Prompt(ctx, text("go")); err != nil {
			b.Fatal(err)
		}
		if len(lat) != perTurn {
			b.Fatalf("got %d events, want %d", len(lat), perTurn)
		}
		all = append(all, lat...)
	}
	b.StopTimer()
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-µs/event")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds())/1e3, "p99-µs/event")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(len(all)), "ns/event")
}

// BenchmarkEventLatency measures the latency the adapter adds per harness
// event (line written by the harness -> EventSink called) with the lines
// paced 100 µs apart, so queueing behind earlier lines does not count.
func BenchmarkEventLatency(b *testing.B) { benchEvents(b, 100) }

// BenchmarkEventFlood sends the 10,000 lines as fast as the fake can write
// them: ns/event is the adapter's throughput, and the percentiles include
// the time lines wait in the pipe.
func BenchmarkEventFlood(b *testing.B) { benchEvents(b, 0) }

// bigTranscript writes the recorded transcript repeated to about 50 MB.
func bigTranscript(b *testing.B) (string, int64) {
	src, err := os.ReadFile(testdata(b, recordedTranscript))
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "big.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	var n int64
	for n < 50<<20 {
		w.Write(src)
		if !bytes.HasSuffix(src, []byte("\n")) {
			w.WriteByte('\n')
		}
		n += int64(len(src)) + 1
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(path)
	return path, st.Size()
}

// BenchmarkImport measures transcript import throughput on a ~50 MB
// transcript and, when jq is installed, compares it with `jq -c . FILE`
// (a parse and re-print of every line) on the same file.
func BenchmarkImport(b *testing.B) {
	path, size := bigTranscript(b)
	h := New(Config{ConfigDir: b.TempDir()})
	ctx := context.Background()
	b.SetBytes(size)
	b.ResetTimer()
	var entries int
	for range b.N {
		is, err := h.Import(ctx, path, nil)
		if err != nil {
			b.Fatal(err)
		}
		entries = len(is.Entries)
	}
	b.StopTimer()
	mb := float64(size) / (1 << 20)
	b.ReportMetric(mb*float64(b.N)/b.Elapsed().Seconds(), "import-MB/s")
	b.ReportMetric(float64(entries), "entries")
	jq, err := exec.LookPath("jq")
	if err != nil {
		b.Log("jq is not installed: no comparison")
		return
	}
	start := time.Now()
	cmd := exec.Command(jq, "-c", ".", path)
	cmd.Stdout = nil // discarded, like > /dev/null
	if err := cmd.Run(); err != nil {
		b.Fatalf("jq: %v", err)
	}
	b.ReportMetric(mb/time.Since(start).Seconds(), "jq-MB/s")
}

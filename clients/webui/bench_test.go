package webui_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage"
)

// seed writes a session of n entries (messages and tool results) into a
// data directory's database.
func seed(b *testing.B, dir string, n int) string {
	b.Helper()
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(dir, "bridge.db"), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: "/tmp", Title: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]core.NewEntry, 0, 1000)
	for i := 0; i < n; i++ {
		kind := core.KindAssistantMessage
		payload := core.Payload(map[string]any{"text": fmt.Sprintf("message %d: **%s**", i, strings.Repeat("lorem ipsum ", 8))})
		if i%2 == 1 {
			kind = core.KindToolCompleted
			payload = core.Payload(map[string]any{"toolId": fmt.Sprintf("t%d", i), "name": "Read", "output": "ok"})
		}
		batch = append(batch, core.NewEntry{Kind: kind, Payload: payload})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := db.Append(ctx, s.ID, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return s.ID
}

func quantile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

// BenchmarkWebUI measures in Chromium, with the page's performance marks:
// page load to the session list shown (goal ≤ 300 ms), opening a session
// of 100,000 entries to its newest page shown (goal ≤ 100 ms on loopback),
// and the time between frames while scrolling 1,000 entries back (goal:
// p95 ≤ 16 ms).
// One iteration is 20 page loads; run with -benchtime=1x.
func BenchmarkWebUI(b *testing.B) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		b.Fatalf("chromium is not on PATH: %v", err)
	}
	b.Setenv("CHROMIUM", chromium)
	dir := b.TempDir()
	sid := seed(b, dir, 100_000)
	// WEBUI_BENCH_BIN measures another build (an older commit's, for a
	// baseline in the same conditions).
	bin := binPath
	if v := os.Getenv("WEBUI_BENCH_BIN"); v != "" {
		bin = v
	}
	cmd := exec.Command(bin, "web", "--data-dir", dir, "--listen", "127.0.0.1:0")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	m := regexp.MustCompile(`^Bridge WebUI: (\S+)`).FindStringSubmatch(line)
	if m == nil {
		b.Fatalf("first line %q", line)
	}
	for i := 0; i < b.N; i++ {
		out, err := exec.Command("node", "bench/pageload.mjs", m[1], sid, "20").Output()
		if err != nil {
			b.Fatalf("pageload.mjs: %v", err)
		}
		var r struct{ Load, Open, Frames []float64 }
		if err := json.Unmarshal(out, &r); err != nil {
			b.Fatalf("pageload.mjs printed %q: %v", out, err)
		}
		b.ReportMetric(quantile(r.Load, 0.5), "load-median-ms")
		b.ReportMetric(quantile(r.Load, 0.9), "load-p90-ms")
		b.ReportMetric(quantile(r.Open, 0.5), "open100k-median-ms")
		b.ReportMetric(quantile(r.Open, 0.9), "open100k-p90-ms")
		b.ReportMetric(quantile(r.Frames, 0.5), "scroll1000-frame-median-ms")
		b.ReportMetric(quantile(r.Frames, 0.95), "scroll1000-frame-p95-ms")
	}
}

// BenchmarkBundleSize reports the WebUI bundle's size, raw and gzipped
// (goal: ≤ 80 KB gzipped).
func BenchmarkBundleSize(b *testing.B) {
	var raw, gz int
	for i := 0; i < b.N; i++ {
		raw, gz = 0, 0
		for _, f := range []string{"dist/app.js", "dist/app.css", "dist/index.html"} {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			raw += len(data)
			var w countWriter
			z, _ := gzip.NewWriterLevel(&w, gzip.BestCompression)
			z.Write(data)
			z.Close()
			gz += int(w)
		}
	}
	b.ReportMetric(float64(raw)/1024, "raw-KB")
	b.ReportMetric(float64(gz)/1024, "gzip-KB")
}

type countWriter int

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }

// BenchmarkMarkdown times the WebUI's Markdown parser over hostile inputs
// at 1×, 10× and 100× 1,000 bytes (bench/markdown.mjs) and reports, per
// input, the time per byte at 100× over that at 1× (linear: about 1; goal
// ≤ 1.5), and the worst of them. Run with -benchtime=1x.
func BenchmarkMarkdown(b *testing.B) {
	for i := 0; i < b.N; i++ {
		out, err := exec.Command("node", "--expose-gc", "bench/markdown.mjs", "1000", "30").Output()
		if err != nil {
			b.Fatalf("markdown.mjs: %v", err)
		}
		var r struct {
			Cases []struct {
				Name      string
				NsPerByte []float64
				Ratio     float64
			}
		}
		if err := json.Unmarshal(out, &r); err != nil {
			b.Fatalf("markdown.mjs printed %q: %v", out, err)
		}
		worst := 0.0
		for _, c := range r.Cases {
			b.Logf("%-26s ns/byte at 1×, 10×, 100×: %v (100×/1×: %.2f)", c.Name, c.NsPerByte, c.Ratio)
			worst = max(worst, c.Ratio)
		}
		b.ReportMetric(worst, "worst-ratio-100x/1x")
	}
}

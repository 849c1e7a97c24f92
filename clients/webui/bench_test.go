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
// page load to the session list on screen, in a new tab of a running
// browser (goal ≤ 300 ms; "load-window" is the earlier figure: a new
// browser window per load, to the list built), opening a session of
// 100,000 entries to its newest page on screen (goal ≤ 100 ms on loopback),
// and the time between frames while scrolling 1,000 entries back (goal:
// p95 ≤ 16 ms), with the most history rows the page held at once during
// the scroll (rows are virtualized). One iteration is 20 page loads per
// build (WEBUI_BENCH_ROUNDS=N: N); run with -benchtime=1x.
//
// WEBUI_BENCH_BASE_BIN names another build (an older commit's bridge) to
// measure in the same run as the baseline: each build serves its own copy
// of the same data directory, the two take turns page load by page load,
// and the ratios new/base are reported beside each build's figures.
// WEBUI_BENCH_THROTTLE=4 slows the page's CPU 4× (DevTools) for both.
func BenchmarkWebUI(b *testing.B) {
	sid, builds := startBuilds(b)
	args := []string{"bench/pageload.mjs", sid, "20"}
	for _, bu := range builds {
		args = append(args, bu.label+"="+bu.url)
	}
	type result struct {
		Load, Window, Open, Frames, Shown []float64
		Phases                            map[string]float64
	}
	for i := 0; i < b.N; i++ {
		cmd := exec.Command("node", args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("pageload.mjs: %v", err)
		}
		var rs map[string]result
		if err := json.Unmarshal(out, &rs); err != nil {
			b.Fatalf("pageload.mjs printed %q: %v", out, err)
		}
		figures := func(r result) map[string]float64 {
			return map[string]float64{
				"load-median-ms":             quantile(r.Load, 0.5),
				"load-p90-ms":                quantile(r.Load, 0.9),
				"load-window-median-ms":      quantile(r.Window, 0.5),
				"open100k-median-ms":         quantile(r.Open, 0.5),
				"open100k-p90-ms":            quantile(r.Open, 0.9),
				"scroll1000-frame-median-ms": quantile(r.Frames, 0.5),
				"scroll1000-frame-p95-ms":    quantile(r.Frames, 0.95),
				"scroll1000-rows-in-page":    quantile(r.Shown, 1),
			}
		}
		for _, bu := range builds {
			r := rs[bu.label]
			for k, v := range figures(r) {
				b.ReportMetric(v, bu.label+"-"+k)
			}
			b.Logf("%s: phases (median ms from navigation start): %v", bu.label, r.Phases)
		}
		if len(builds) == 2 {
			n, o := figures(rs["new"]), figures(rs["base"])
			for _, k := range []string{"load-median-ms", "open100k-median-ms", "scroll1000-frame-p95-ms"} {
				b.ReportMetric(n[k]/o[k], "ratio-"+strings.TrimSuffix(k, "-ms"))
			}
		}
	}
}

// build is one bridge web serving a seeded data directory.
type build struct{ label, url string }

// startBuilds seeds a session of 100,000 entries and starts bridge web on
// it: the build under test ("new") and, with WEBUI_BENCH_BASE_BIN, that
// binary ("base") on its own copy of the data directory.
func startBuilds(b *testing.B) (string, []build) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		b.Fatalf("chromium is not on PATH: %v", err)
	}
	b.Setenv("CHROMIUM", chromium)
	dir := b.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "new"), 0o700); err != nil {
		b.Fatal(err)
	}
	sid := seed(b, filepath.Join(dir, "new"), 100_000)
	type server struct{ label, bin, dir string }
	servers := []server{{"new", binPath, filepath.Join(dir, "new")}}
	if v := os.Getenv("WEBUI_BENCH_BASE_BIN"); v != "" {
		base := filepath.Join(dir, "base")
		if err := os.CopyFS(base, os.DirFS(filepath.Join(dir, "new"))); err != nil {
			b.Fatal(err)
		}
		if err := os.Chmod(base, 0o700); err != nil {
			b.Fatal(err)
		}
		servers = append(servers, server{"base", v, base})
	}
	var out []build
	for _, sv := range servers {
		cmd := exec.Command(sv.bin, "web", "--data-dir", sv.dir, "--listen", "127.0.0.1:0")
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		m := regexp.MustCompile(`^Bridge WebUI: (\S+)`).FindStringSubmatch(line)
		if m == nil {
			b.Fatalf("%s: first line %q", sv.label, line)
		}
		out = append(out, build{sv.label, m[1]})
	}
	return sid, out
}

// BenchmarkWebUIScrollCPU records a DevTools trace while scrolling 1,000
// entries back (bench/profile.mjs) and reports the renderer main thread's
// CPU time (thread time, which the machine's load inflates far less than
// wall time): in all, in its longest task, the tasks over 16 ms, per kind
// of work (script, style, layout, paint), and per frame (frame-cpu-p50/p95/
// max: the main thread's tasks from one animation frame to the next). The
// work per frame is the figure to hold against the goal of 16 ms per frame
// at p95: BenchmarkWebUI's time between frames is set by the display's
// 60 Hz (a multiple of 16.7 ms; its median is 16.7 ms), so its p95 cannot
// be at or under 16 ms whatever the page does. The builds take turns, six
// traces each; the medians are reported, and with WEBUI_BENCH_BASE_BIN the
// ratios new/base. Run with -benchtime=1x.
func BenchmarkWebUIScrollCPU(b *testing.B) {
	sid, builds := startBuilds(b)
	type trace struct {
		TasksCPUMs    float64 `json:"tasksCpuMs"`
		TaskCPUMax    float64 `json:"taskCpuMax"`
		TasksOver16ms float64 `json:"tasksOver16ms"`
		FrameCPUP50   float64 `json:"frameCpuP50"`
		FrameCPUP95   float64 `json:"frameCpuP95"`
		FrameCPUMax   float64 `json:"frameCpuMax"`
		CPUMs         map[string]float64
	}
	for i := 0; i < b.N; i++ {
		got := map[string]map[string][]float64{}
		for round := 0; round < 6; round++ {
			for _, bu := range builds {
				cmd := exec.Command("node", "bench/profile.mjs", bu.url, sid)
				cmd.Stderr = os.Stderr
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("profile.mjs: %v", err)
				}
				var t trace
				if err := json.Unmarshal(out, &t); err != nil {
					b.Fatalf("profile.mjs printed %q: %v", out, err)
				}
				if got[bu.label] == nil {
					got[bu.label] = map[string][]float64{}
				}
				m := got[bu.label]
				m["cpu-ms"] = append(m["cpu-ms"], t.TasksCPUMs)
				m["longest-task-cpu-ms"] = append(m["longest-task-cpu-ms"], t.TaskCPUMax)
				m["tasks-over-16ms"] = append(m["tasks-over-16ms"], t.TasksOver16ms)
				m["frame-cpu-p50-ms"] = append(m["frame-cpu-p50-ms"], t.FrameCPUP50)
				m["frame-cpu-p95-ms"] = append(m["frame-cpu-p95-ms"], t.FrameCPUP95)
				m["frame-cpu-max-ms"] = append(m["frame-cpu-max-ms"], t.FrameCPUMax)
				for _, k := range []string{"script", "style", "layout", "paint"} {
					m[k+"-cpu-ms"] = append(m[k+"-cpu-ms"], t.CPUMs[k])
				}
			}
		}
		for label, m := range got {
			for k, v := range m {
				b.ReportMetric(quantile(v, 0.5), label+"-"+k)
			}
		}
		if got["base"] != nil {
			for _, k := range []string{"cpu-ms", "layout-cpu-ms", "longest-task-cpu-ms", "frame-cpu-p95-ms"} {
				b.ReportMetric(quantile(got["new"][k], 0.5)/quantile(got["base"][k], 0.5), "ratio-"+k)
			}
		}
	}
}

// BenchmarkBundleSize reports the WebUI bundle's size, raw and gzipped
// (goal: ≤ 80 KB gzipped): index.html, which holds the stylesheet, and
// app.js, the script.
func BenchmarkBundleSize(b *testing.B) {
	var raw, gz int
	for i := 0; i < b.N; i++ {
		raw, gz = 0, 0
		for _, f := range []string{"dist/index.html", "dist/app.js"} { // the stylesheet is inlined
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

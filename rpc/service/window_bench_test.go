package service_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
)

// The live paths on long sessions (issue 14): a checkpoint, session/compact,
// a restore from a checkpoint and a context-pressure gauge reading, each on
// a session of 1,000,000 entries against the same on one of 10,000, every
// operation in a child process of its own on a fresh copy of the database
// (time of the operation alone; peak RSS, VmHWM, of the whole child; and,
// apart, the one-time rebuild of a stale summary), and
// the per-event latency of a session receiving a stream of events while a
// gauge reading over the threshold arrives, against a bare pipe reader.
//
//	BRIDGE_BENCH_DIR=/tmp/bridge-live go test -run '^$' -bench LiveLongSession -benchtime 1x -timeout 60m ./rpc/service
//
// The two databases are built once under BRIDGE_BENCH_DIR (kept for the
// next run; delete the directory when done), else in a temporary directory.

const liveChildEnv = "BRIDGE_LIVE_CHILD" // op|dir|sessionID

var liveSizes = []int{10_000, 1_000_000}

func BenchmarkLiveLongSession(b *testing.B) {
	root := os.Getenv("BRIDGE_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	} else {
		root = filepath.Join(root, "live")
	}
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("BRIDGE_LIVE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	bases := map[int]string{}
	sessions := map[int]string{}
	for _, n := range liveSizes {
		bases[n], sessions[n] = liveBase(b, root, n)
	}
	b.ResetTimer()
	for range b.N {
		type sample struct{ ns, hwm []float64 }
		res := map[string]map[int]*sample{}
		ops := []string{"idle", "checkpoint", "compact", "restore", "gauge", "rebuild"}
		if os.Getenv("BRIDGE_LIVE_EVENTS_ONLY") != "" {
			ops = nil // only the event latency
		}
		for r := 0; r < rounds && len(ops) > 0; r++ {
			for _, op := range ops {
				for _, n := range liveSizes {
					ns, hwm := liveChild(b, op, bases[n], sessions[n])
					if res[op] == nil {
						res[op] = map[int]*sample{}
					}
					if res[op][n] == nil {
						res[op][n] = &sample{}
					}
					res[op][n].ns = append(res[op][n].ns, ns)
					res[op][n].hwm = append(res[op][n].hwm, hwm)
				}
			}
		}
		for _, op := range ops {
			small, big := res[op][liveSizes[0]], res[op][liveSizes[1]]
			b.Logf("%-10s 10k: time ms %s  VmHWM MiB %s | 1M: time ms %s  VmHWM MiB %s | ratio time %.2f, VmHWM %.2f",
				op, spread(small.ns, 1e6), spread(small.hwm, 1024), spread(big.ns, 1e6), spread(big.hwm, 1024),
				median(big.ns)/median(small.ns), median(big.hwm)/median(small.hwm))
			b.ReportMetric(median(big.ns)/median(small.ns), op+"-time-1M/10k")
			b.ReportMetric(median(big.hwm)/median(small.hwm), op+"-hwm-1M/10k")
		}
		eventLatency(b, bases, sessions, rounds)
	}
}

// spread renders min / median / max of xs divided by unit.
func spread(xs []float64, unit float64) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	return fmt.Sprintf("%.1f/%.1f/%.1f", s[0]/unit, median(s)/unit, s[len(s)-1]/unit)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// liveBase returns the directory of a database holding one session of n
// entries (built there once): turns of a user message, assistant messages
// and tool calls with their results, now and then a worker result or an
// artifact, and a checkpoint committed halfway that retains the last few
// messages before it.
func liveBase(b *testing.B, root string, n int) (dir, sessionID string) {
	ctx := context.Background()
	dir = filepath.Join(root, strconv.Itoa(n))
	if id, err := os.ReadFile(filepath.Join(dir, "session")); err == nil {
		return dir, string(id)
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	db, err := storage.Open(ctx, filepath.Join(dir, "bridge.db"), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := db.CreateSession(ctx, core.Session{Harness: "fake", Cwd: dir, Title: "long", Model: "fake-large",
		NativeSessionID: "gone-" + strconv.Itoa(n)})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(n), 14))
	words := strings.Fields("the parser reads a token stream and builds the tree while the checker walks it " +
		"looking for types that do not match what the caller declared in its signature so the error names both")
	text := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	var batch []core.NewEntry
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if _, err := db.Append(ctx, s.ID, batch...); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	add := func(e core.NewEntry) {
		e.TokenEstimate = int64(len(e.Payload)/4 + 1)
		batch = append(batch, e)
		if len(batch) == 2000 {
			flush()
		}
	}
	count, tool := 0, 0
	committed := false
	for count < n {
		if !committed && count >= n/2 {
			flush()
			page, _, err := db.History(ctx, s.ID, 0, 6)
			if err != nil {
				b.Fatal(err)
			}
			cp := checkpoint.Checkpoint{SchemaVersion: 1, Summary: "HALFWAY the parser and checker are done",
				Decisions: []string{"use a recursive-descent parser"}, FilesTouched: []string{"parse.go"},
				FirstRetainedEntryID: page[0].ID, Reason: checkpoint.ReasonManual, Provenance: checkpoint.ProvenanceAgent}
			if _, err := db.Append(ctx, s.ID, checkpoint.CommitEntries(cp, "e_halfway_cp_"+strconv.Itoa(n), "e_halfway_mk_"+strconv.Itoa(n))...); err != nil {
				b.Fatal(err)
			}
			count += 3
			committed = true
		}
		add(core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(map[string]any{"text": text(10 + r.IntN(30))})})
		count++
		for k := r.IntN(4); k >= 0 && count < n; k-- {
			tool++
			id := "t" + strconv.Itoa(tool)
			add(core.NewEntry{Kind: core.KindToolStarted, Payload: core.Payload(map[string]any{"toolId": id, "name": "Read", "input": map[string]string{"path": "src/" + id + ".go"}})})
			add(core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]any{"toolId": id, "name": "Read", "output": text(20 + r.IntN(60))})})
			add(core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(map[string]any{"text": text(10 + r.IntN(40))})})
			count += 3
		}
		if r.IntN(50) == 0 {
			add(core.NewEntry{Kind: core.KindWorkerResult, Payload: core.Payload(map[string]any{"status": "completed",
				"decisions": []string{"decision " + strconv.Itoa(r.IntN(20))}, "filesChanged": []string{"src/f" + strconv.Itoa(r.IntN(40)) + ".go"}})})
			count++
		}
	}
	flush()
	if err := db.CatchUpSearch(ctx); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "session"), []byte(s.ID), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Logf("built a session of %d entries in %s", n, time.Since(start).Round(time.Second))
	return dir, s.ID
}

// copyBase copies the database directory base to work and waits until the
// copy is on disk: the writeback of a 1M-entry copy would otherwise stall
// the writes measured next.
func copyBase(b *testing.B, base, work string) {
	if out, err := exec.Command("cp", "-r", "--reflink=auto", base, work).CombinedOutput(); err != nil {
		b.Fatalf("copy %s: %v %s", base, err, out)
	}
	syscall.Sync()
}

// liveChild copies base and runs op in a child process on the copy; it
// returns the operation's time (ns) and the child's VmHWM (kB).
func liveChild(b *testing.B, op, base, sessionID string) (ns, hwm float64) {
	work := base + ".run"
	os.RemoveAll(work)
	defer os.RemoveAll(work)
	copyBase(b, base, work)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLiveChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), liveChildEnv+"="+op+"|"+work+"|"+sessionID)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child %s: %v\n%s", op, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "LIVE "); ok {
			if _, err := fmt.Sscanf(rest, "%g %g", &ns, &hwm); err != nil {
				b.Fatalf("child %s: %q: %v", op, line, err)
			}
			return ns, hwm
		}
	}
	b.Fatalf("child %s printed no result:\n%s", op, out)
	return 0, 0
}

// TestLiveChild is not a test: it is the child of BenchmarkLiveLongSession,
// running one operation on one database copy and printing
// "LIVE <ns> <VmHWM kB>".
func TestLiveChild(t *testing.T) {
	spec := os.Getenv(liveChildEnv)
	if spec == "" {
		return
	}
	parts := strings.SplitN(spec, "|", 3)
	op, dir, sid := parts[0], parts[1], parts[2]
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(dir, "bridge.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	opts := fake.Options{StateDir: filepath.Join(dir, "fake")}
	if op == "gauge" || op == "checkpoint" {
		opts.Gauge, opts.Window, opts.Missing = true, 100000, []string{core.CapCompactCommand}
	}
	rec := &savedSignal{Recorder: servicetest.NewRecorder(), pressure: make(chan struct{})}
	svc, err := service.New(service.Options{Store: db, Hosts: []core.BridgeHost{fake.New(opts)}, Notifier: rec,
		DataDir: t.TempDir(), NoShutdownCheckpoint: true, CheckpointTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	prompt := func(text string) {
		if _, err := svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: sid, Content: []schema.Content{{Type: "text", Text: text}}}); err != nil {
			t.Fatal(err)
		}
	}
	if op == "rebuild" {
		// A database written before the summary existed (or a branch
		// switch): the first read rebuilds it from the entries since the
		// last boundary.
		if _, err := db.SQL().ExecContext(ctx, `DELETE FROM session_windows`); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		w, err := db.Window(ctx, sid)
		if err != nil || w.BoundaryID == "" {
			t.Fatalf("%+v %v", w, err)
		}
		fmt.Printf("LIVE %d %d\n", time.Since(start).Nanoseconds(), vmHWM(t))
		return
	}
	if op != "restore" {
		if _, err := svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: sid, Mode: schema.ResumeFresh}); err != nil {
			t.Fatal(err)
		}
		reply := "next" // the checkpoint request is the next prompt
		if op == "gauge" {
			reply = "after 2" // after the prompt that reports the reading
		}
		prompt("say back at work\ntool Read main.go\n" + reply + " json {\"summary\": \"LIVE checkpoint\"}")
	}
	start := time.Now()
	switch op {
	case "idle":
	case "checkpoint":
		if _, err := svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: sid, Reason: "manual"}); err != nil {
			t.Fatal(err)
		}
	case "compact":
		if out, err := svc.SessionCompact(ctx, schema.SessionCompactParams{SessionID: sid}); err != nil || out.By != "harness" {
			t.Fatalf("%+v %v", out, err)
		}
	case "restore":
		res, err := svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: sid})
		if err != nil || res.Mode != core.ModeCheckpointRestored {
			t.Fatalf("%+v %v", res, err)
		}
	case "gauge":
		prompt("usage 80000")
		select {
		case <-rec.pressure:
		case <-time.After(time.Minute):
			t.Fatal("no context_pressure checkpoint")
		}
	}
	elapsed := time.Since(start)
	fmt.Printf("LIVE %d %d\n", elapsed.Nanoseconds(), vmHWM(t))
}

// savedSignal closes pressure when a context_pressure checkpoint is saved.
type savedSignal struct {
	*servicetest.Recorder
	pressure chan struct{}
	once     sync.Once
}

func (r *savedSignal) CheckpointSaved(n service.CheckpointSaved) {
	r.Recorder.CheckpointSaved(n)
	if n.Reason == "context_pressure" {
		r.once.Do(func() { close(r.pressure) })
	}
}

// vmHWM is this process's peak resident set size in kB.
func vmHWM(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// sinkHost is the fake host whose live sessions' event sink the benchmark
// can also feed, as an adapter's reader would.
type sinkHost struct {
	*fake.Host
	mu   sync.Mutex
	sink core.EventSink
}

func (h *sinkHost) CreateSession(ctx context.Context, req core.CreateRequest, sink core.EventSink) (core.Live, error) {
	h.mu.Lock()
	h.sink = sink
	h.mu.Unlock()
	return h.Host.CreateSession(ctx, req, sink)
}

// stampClock times each session/update of an assistant message whose text
// is the time it was sent (Unix ns).
type stampClock struct {
	*servicetest.Recorder
	mu  sync.Mutex
	lat []time.Duration
}

func (c *stampClock) EntryAppended(e core.Entry) {
	now := time.Now().UnixNano()
	if e.Kind == core.KindAssistantMessage {
		var p struct{ Text string }
		if json.Unmarshal(e.Payload, &p) == nil {
			if sent, err := strconv.ParseInt(p.Text, 10, 64); err == nil {
				c.mu.Lock()
				c.lat = append(c.lat, time.Duration(now-sent))
				c.mu.Unlock()
			}
		}
	}
	c.Recorder.EntryAppended(e)
}

// eventLatency streams events (one every 500 µs, through a pipe, read by
// a goroutine that hands them to the session's sink) into a live session of
// each size, with a gauge reading at 80% of the window halfway (and, as a
// baseline, into the 1M session without one), and the same stream to a bare
// reader that only notes when each line arrived.
func eventLatency(b *testing.B, bases, sessions map[int]string, rounds int) {
	const perRun = 4000
	keys := []string{"pipe", "10000", "1000000", "nogauge"}
	all := map[string][]time.Duration{}
	runP99 := map[string][]float64{}   // per run
	afterMax := map[string][]float64{} // per run: the slowest of the 200 events after the reading (100 ms)
	big := liveSizes[len(liveSizes)-1]
	add := func(k string, lat []time.Duration) {
		if k != "pipe" && len(lat) >= perRun/2+200 {
			afterMax[k] = append(afterMax[k], float64(slices.Max(lat[perRun/2:perRun/2+200])))
		}
		all[k] = append(all[k], lat...)
		s := slices.Clone(lat)
		slices.Sort(s)
		runP99[k] = append(runP99[k], float64(s[len(s)*99/100]))
	}
	for r := 0; r < rounds; r++ {
		add("pipe", streamPipe(b, perRun, nil))
		for _, n := range liveSizes {
			add(strconv.Itoa(n), streamSession(b, bases[n], sessions[n], perRun, true))
		}
		add("nogauge", streamSession(b, bases[big], sessions[big], perRun, false))
	}
	for _, k := range keys {
		s := all[k]
		slices.Sort(s)
		line := fmt.Sprintf("event latency %-8s pooled p50 %v p99 %v max %v (%d events); p99 per run (ms) %s",
			k, s[len(s)/2], s[len(s)*99/100], s[len(s)-1], len(s), spread(runP99[k], 1e6))
		if len(afterMax[k]) > 0 {
			line += fmt.Sprintf("; slowest of the 200 events after the reading (ms) %s", spread(afterMax[k], 1e6))
		}
		b.Log(line)
	}
	ratio := func(k string) float64 { return median(runP99[k]) / median(runP99["pipe"]) }
	b.Logf("median per-run event p99 as a ratio to the bare pipe reader's: 10k %.0f, 1M %.0f, 1M without a gauge reading %.0f; 1M/10k %.2f; 1M with/without the reading %.2f",
		ratio("10000"), ratio("1000000"), ratio("nogauge"), ratio("1000000")/ratio("10000"), ratio("1000000")/ratio("nogauge"))
	b.ReportMetric(ratio("1000000"), "event-p99-1M/pipe")
	b.ReportMetric(ratio("1000000")/ratio("10000"), "event-p99-1M/10k")
	b.ReportMetric(ratio("1000000")/ratio("nogauge"), "event-p99-gauge/none")
}

// streamPipe writes n stamped lines, 500 µs apart, into a pipe read by a
// goroutine; each line read is handed to deliver (nil: the bare reader
// notes its latency itself). It returns the bare latencies.
func streamPipe(b *testing.B, n int, deliver func(i int, line string)) []time.Duration {
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	var out []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		i := 0
		for sc.Scan() {
			line := sc.Text()
			if deliver != nil {
				deliver(i, line)
			} else if sent, err := strconv.ParseInt(line, 10, 64); err == nil {
				out = append(out, time.Duration(time.Now().UnixNano()-sent))
			}
			i++
		}
	}()
	w := bufio.NewWriter(pw)
	next := time.Now()
	for i := 0; i < n; i++ {
		next = next.Add(500 * time.Microsecond)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		fmt.Fprintf(w, "%d\n", time.Now().UnixNano())
		w.Flush()
	}
	pw.Close()
	<-done
	pr.Close()
	return out
}

// streamSession streams into a fresh copy of base's session, made live by a
// fresh resume, with a gauge reading at 80% halfway; it returns the
// latency of each event from the line being written to its session/update.
func streamSession(b *testing.B, base, sid string, n int, gauge bool) []time.Duration {
	ctx := context.Background()
	work := base + ".stream"
	os.RemoveAll(work)
	defer os.RemoveAll(work)
	copyBase(b, base, work)
	db, err := storage.Open(ctx, filepath.Join(work, "bridge.db"), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	host := &sinkHost{Host: fake.New(fake.Options{Gauge: true, Window: 100000, Missing: []string{core.CapCompactCommand}})}
	clock := &stampClock{Recorder: servicetest.NewRecorder()}
	svc, err := service.New(service.Options{Store: db, Hosts: []core.BridgeHost{host}, Notifier: clock,
		DataDir: b.TempDir(), NoShutdownCheckpoint: true, CheckpointTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(ctx)
	if _, err := svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: sid, Mode: schema.ResumeFresh}); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: sid, Content: []schema.Content{{Type: "text",
		Text: "say streaming next\nnext json {\"summary\": \"STREAM checkpoint\"}"}}}); err != nil {
		b.Fatal(err)
	}
	host.mu.Lock()
	sink := host.sink
	host.mu.Unlock()
	clock.mu.Lock()
	clock.lat = nil
	clock.mu.Unlock()
	streamPipe(b, n, func(i int, line string) {
		if i == n/2 && gauge {
			sink(core.Event{Gauge: &core.Gauge{Used: 80000, Size: 100000}})
		}
		e := core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(map[string]string{"text": line})}
		sink(core.Event{Entry: &e})
	})
	clock.Await(b, "every streamed event announced", func() bool {
		clock.mu.Lock()
		defer clock.mu.Unlock()
		return len(clock.lat) >= n
	})
	clock.Await(b, "the context_pressure checkpoint", func() bool {
		if !gauge {
			return true
		}
		for _, s := range clock.Saved {
			if s.Reason == "context_pressure" {
				return true
			}
		}
		return false
	})
	clock.mu.Lock()
	defer clock.mu.Unlock()
	return append([]time.Duration(nil), clock.lat...)
}

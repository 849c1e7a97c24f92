package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/handoff"
)

// events collects a live session's sink.
type events struct {
	mu  sync.Mutex
	evs []core.Event
	ch  chan core.Event
}

func newEvents() *events { return &events{ch: make(chan core.Event, 100_000)} }

func (e *events) sink(ev core.Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
	e.ch <- ev
}

func (e *events) entries() []core.NewEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []core.NewEntry
	for _, ev := range e.evs {
		if ev.Entry != nil {
			out = append(out, *ev.Entry)
		}
	}
	return out
}

func (e *events) gauges() []core.Gauge {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []core.Gauge
	for _, ev := range e.evs {
		if ev.Gauge != nil {
			out = append(out, *ev.Gauge)
		}
	}
	return out
}

// waitText blocks until an assistant.message with text arrives.
func (e *events) waitText(t *testing.T, text string) {
	t.Helper()
	for ev := range e.ch {
		if ev.Entry != nil && ev.Entry.Kind == core.KindAssistantMessage && field(t, *ev.Entry, "text") == text {
			return
		}
	}
}

func field(t *testing.T, e core.NewEntry, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		t.Fatalf("payload of %s: %v", e.Kind, err)
	}
	s, _ := m[name].(string)
	return s
}

func text(s string) []core.Content { return []core.Content{{Type: "text", Text: s}} }

func start(t *testing.T, h *fake.Host) (*fake.Live, *events) {
	t.Helper()
	ev := newEvents()
	live, err := h.CreateSession(context.Background(), core.CreateRequest{Cwd: "/work/x", Title: "t"}, ev.sink)
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	t.Cleanup(func() { live.Close(context.Background()) })
	return live.(*fake.Live), ev
}

func prompt(t *testing.T, l core.Live, s string) core.TurnResult {
	t.Helper()
	res, err := l.Prompt(context.Background(), text(s))
	if err != nil {
		t.Fatalf("Prompt(%q): %v", s, err)
	}
	return res
}

func TestScriptDirectives(t *testing.T) {
	h := fake.New(fake.Options{Gauge: true, Window: 5000})
	live, ev := start(t, h)
	res := prompt(t, live, strings.Join([]string{
		"say hello there",
		"tool Bash ls -la",
		"file src/main.go",
		"decide use SQLite for the record",
		`json {"summary":"s","decisions":["d"]}`,
		"usage 1200",
		"compact auto",
		"compact manual 900 100",
		"stream 3",
		"sleep 1",
	}, "\n"))
	if res.StopReason != "end_turn" {
		t.Fatalf("stop reason %q", res.StopReason)
	}
	got := ev.entries()
	wantKinds := []core.Kind{core.KindAssistantMessage, core.KindToolStarted, core.KindToolCompleted,
		core.KindArtifactCreated, core.KindWorkerResult, core.KindAssistantMessage, core.KindContextCompacted,
		core.KindContextCompacted, core.KindAssistantMessage, core.KindAssistantMessage, core.KindAssistantMessage}
	if len(got) != len(wantKinds) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(wantKinds), got)
	}
	ids := map[string]bool{}
	for i, e := range got {
		if e.Kind != wantKinds[i] {
			t.Errorf("entry %d kind %s, want %s", i, e.Kind, wantKinds[i])
		}
		if err := e.Validate(); err != nil {
			t.Errorf("entry %d: %v", i, err)
		}
		if e.NativeID == "" || ids[e.NativeID] {
			t.Errorf("entry %d NativeID %q is empty or repeated", i, e.NativeID)
		}
		ids[e.NativeID] = true
	}
	if s := field(t, got[0], "text"); s != "hello there" {
		t.Errorf("say text %q", s)
	}
	if a, b := field(t, got[1], "toolId"), field(t, got[2], "toolId"); a == "" || a != b {
		t.Errorf("tool ids %q / %q must match", a, b)
	}
	if s := field(t, got[1], "name"); s != "Bash" || field(t, got[1], "input") != "ls -la" {
		t.Errorf("tool.started payload %s", got[1].Payload)
	}
	if s := field(t, got[3], "path"); s != "src/main.go" {
		t.Errorf("artifact path %q", s)
	}
	var wr struct {
		Status    string   `json:"status"`
		Decisions []string `json:"decisions"`
	}
	json.Unmarshal(got[4].Payload, &wr)
	if wr.Status != "completed" || len(wr.Decisions) != 1 || wr.Decisions[0] != "use SQLite for the record" {
		t.Errorf("worker.result %s", got[4].Payload)
	}
	if s := field(t, got[5], "text"); s != `{"summary":"s","decisions":["d"]}` {
		t.Errorf("json text %q", s)
	}
	var auto, manual core.Compacted
	json.Unmarshal(got[6].Payload, &auto)
	json.Unmarshal(got[7].Payload, &manual)
	if auto.Harness != "fake" || auto.Trigger != "auto" || *auto.PreTokens != 1200 || *auto.PostTokens != 120 {
		t.Errorf("auto compaction %s", got[6].Payload)
	}
	if got[6].NativeID != auto.NativeID {
		t.Errorf("compaction entry NativeID %q, payload nativeId %q", got[6].NativeID, auto.NativeID)
	}
	if manual.Trigger != "manual" || *manual.PreTokens != 900 || *manual.PostTokens != 100 || len(manual.Raw) == 0 {
		t.Errorf("manual compaction %s", got[7].Payload)
	}
	if s := field(t, got[10], "text"); s != "stream 3/3" {
		t.Errorf("last stream text %q", s)
	}
	g := ev.gauges()
	if len(g) == 0 || g[0].Used != 1200 || g[0].Size != 5000 {
		t.Errorf("gauges %+v, want the first at 1200/5000", g)
	}
	if last := g[len(g)-1]; last.Used <= 100 {
		t.Errorf("the turn-end gauge %+v should count the streamed text after the compaction to 100", last)
	}
}

func TestEchoAndProse(t *testing.T) {
	live, ev := start(t, fake.New(fake.Options{}))
	prompt(t, live, "hello world")
	// Prose that quotes a directive is not a script.
	prompt(t, live, "Please summarise.\ncrash 3")
	got := ev.entries()
	if len(got) != 2 || field(t, got[0], "text") != "fake: hello world" ||
		field(t, got[1], "text") != "fake: Please summarise.\ncrash 3" {
		t.Fatalf("echoes %+v", got)
	}
	for _, e := range got {
		if e.Kind == core.KindUserMessage {
			t.Error("the fake emitted a user.message")
		}
	}
	if len(ev.gauges()) != 0 {
		t.Error("gauge events without Options.Gauge")
	}
}

func TestBadScriptLine(t *testing.T) {
	live, _ := start(t, fake.New(fake.Options{}))
	_, err := live.Prompt(context.Background(), text("say ok\ncrash soon"))
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want invalid naming line 2", err)
	}
	if _, err := live.Prompt(context.Background(), []core.Content{{Type: "video"}}); core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("unknown content type: %v", err)
	}
	prompt(t, live, "say still alive")
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want fake.Step
		bad  bool
	}{
		{in: "say  hi there ", want: fake.Step{Op: fake.OpSay, Text: "hi there"}},
		{in: "tool Read", want: fake.Step{Op: fake.OpTool, Name: "Read"}},
		{in: "compact auto 10 2", want: fake.Step{Op: fake.OpCompact, Trigger: "auto", Pre: 10, Post: 2}},
		{in: "after 2 say later", want: fake.Step{Op: fake.OpAfter, N: 2, Text: "say later"}},
		{in: "next hang", want: fake.Step{Op: fake.OpNext, N: 1, Text: "hang"}},
		{in: "compact sideways", bad: true},
		{in: "stream -1", bad: true},
		{in: "crash 300", bad: true},
		{in: "tool", bad: true},
		{in: "file", bad: true},
		{in: "next prose here", bad: true},
		{in: "after 0 say x", bad: true},
		{in: "sleep forever", bad: true},
	} {
		got, err := fake.ParseLine(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseLine(%q) = %+v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseLine(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	if fake.IsScript("") || fake.IsScript("hello") || !fake.IsScript("\nsay a\n\nhang\n") {
		t.Error("IsScript misjudges")
	}
}

func TestCrash(t *testing.T) {
	h := fake.New(fake.Options{})
	live, _ := start(t, h)
	res, err := live.Prompt(context.Background(), text("say bye\ncrash 3"))
	if res.StopReason != "error" || core.ErrorCode(err) != core.CodeHarness {
		t.Fatalf("crash turn: %+v, %v", res, err)
	}
	select {
	case <-live.Done():
	default:
		t.Fatal("Done is not closed after a crash")
	}
	if x := live.Exit(); x.Code != 3 || x.StderrTail != fake.StderrTail || !strings.Contains(x.StderrTail, "crashed on request") {
		t.Fatalf("Exit = %+v", x)
	}
	if _, err := live.Prompt(context.Background(), text("say again")); core.ErrorCode(err) != core.CodeHarness {
		t.Fatalf("prompt after crash: %v", err)
	}
	hist, err := h.History(context.Background(), live.NativeID())
	if err != nil || len(hist) != 2 || field(t, hist[1], "text") != "bye" {
		t.Fatalf("history after crash: %+v, %v", hist, err)
	}
}

func TestCancelHang(t *testing.T) {
	live, ev := start(t, fake.New(fake.Options{}))
	done := make(chan core.TurnResult)
	errc := make(chan error, 1)
	go func() {
		res, err := live.Prompt(context.Background(), text("say started\nhang"))
		errc <- err
		done <- res
	}()
	ev.waitText(t, "started")
	if _, err := live.Prompt(context.Background(), text("say x")); core.ErrorCode(err) != core.CodeBusy {
		t.Errorf("prompt during a turn: %v, want busy", err)
	}
	if _, err := live.Compact(context.Background(), ""); core.ErrorCode(err) != core.CodeBusy {
		t.Errorf("compact during a turn: %v, want busy", err)
	}
	if err := live.Cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("cancelled turn returned %v", err)
	}
	if res := <-done; res.StopReason != "cancelled" {
		t.Fatalf("stop reason %q", res.StopReason)
	}
	if res := prompt(t, live, "say after"); res.StopReason != "end_turn" {
		t.Fatalf("next turn %q", res.StopReason)
	}
}

func TestHangEndsWithContextOrClose(t *testing.T) {
	live, ev := start(t, fake.New(fake.Options{}))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		res, err := live.Prompt(ctx, text("say waiting\nhang"))
		if res.StopReason != "cancelled" {
			err = errors.Join(err, errors.New("stop reason "+res.StopReason))
		}
		errc <- err
	}()
	ev.waitText(t, "waiting")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned turn: %v", err)
	}

	go func() {
		_, err := live.Prompt(context.Background(), text("say again\nsleep 600000"))
		errc <- err
	}()
	ev.waitText(t, "again")
	if err := live.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; core.ErrorCode(err) != core.CodeHarness {
		t.Fatalf("turn ended by Close: %v", err)
	}
	<-live.Done()
	if x := live.Exit(); x.Code != 0 {
		t.Fatalf("Exit after Close = %+v", x)
	}
}

func TestNextAndAfter(t *testing.T) {
	live, ev := start(t, fake.New(fake.Options{}))
	prompt(t, live, "say working\nnext json {\"summary\":\"done\"}\nafter 2 say third")
	prompt(t, live, "Write a checkpoint of this session as JSON.\nsay not a directive here")
	prompt(t, live, "anything")
	prompt(t, live, "fourth")
	got := ev.entries()
	want := []string{"working", `{"summary":"done"}`, "third", "fake: fourth"}
	if len(got) != len(want) {
		t.Fatalf("entries %+v", got)
	}
	for i, w := range want {
		if s := field(t, got[i], "text"); s != w {
			t.Errorf("turn %d answered %q, want %q", i+1, s, w)
		}
	}
}

func TestScriptOption(t *testing.T) {
	h := fake.New(fake.Options{Script: func(p string) []fake.Step {
		if p == "go" {
			return []fake.Step{fake.Say("scripted"), fake.Tool("Edit", "x.go"), fake.Compact("auto")}
		}
		return nil
	}})
	live, ev := start(t, h)
	prompt(t, live, "go")
	prompt(t, live, "say from text")
	got := ev.entries()
	if len(got) != 5 || field(t, got[0], "text") != "scripted" || got[3].Kind != core.KindContextCompacted ||
		field(t, got[4], "text") != "from text" {
		t.Fatalf("entries %+v", got)
	}
}

// BenchmarkStream measures how fast `stream` emits entries (crash tests
// rely on it flooding the sink).
func BenchmarkStream(b *testing.B) {
	h := fake.New(fake.Options{})
	n := 0
	live, err := h.CreateSession(context.Background(), core.CreateRequest{}, func(ev core.Event) { n++ })
	if err != nil {
		b.Fatal(err)
	}
	defer live.Close(context.Background())
	b.ResetTimer()
	if _, err := live.Prompt(context.Background(), text(fmt.Sprintf("stream %d", b.N))); err != nil {
		b.Fatal(err)
	}
	if n != b.N {
		b.Fatalf("%d entries, want %d", n, b.N)
	}
}

func TestWorkerDirective(t *testing.T) {
	h := fake.New(fake.Options{})
	source, _ := start(t, h)
	prompt(t, source, "say source\nworker json {\"goal\":\"g\"}\nworker say second line")
	worker, ev := start(t, h)
	prompt(t, worker, "Summarise the following session for a handoff ...")
	prompt(t, worker, "again")
	got := ev.entries()
	want := []string{`{"goal":"g"}`, "second line", "fake: again"}
	if len(got) != len(want) {
		t.Fatalf("entries %+v", got)
	}
	for i, w := range want {
		if s := field(t, got[i], "text"); s != w {
			t.Errorf("entry %d %q, want %q", i, s, w)
		}
	}
	// Consumed: the session after that answers by itself.
	third, ev3 := start(t, h)
	prompt(t, third, "hi")
	if s := field(t, ev3.entries()[0], "text"); s != "fake: hi" {
		t.Errorf("third session answered %q", s)
	}
}

// TestSummaryWorkerWritesAHandoff: a prompt that asks for a handoff the way
// migration's summary worker is asked (the instruction, then the folded
// conversation) is answered with five valid sections from the material,
// in English and in Chinese.
func TestSummaryWorkerWritesAHandoff(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		branch := []core.Entry{
			{ID: "e1", Kind: core.KindUserMessage, Payload: core.Payload(map[string]any{"text": "rename the parser"})},
			{ID: "e2", Kind: core.KindAssistantMessage, Payload: core.Payload(map[string]any{"text": "renamed it"})},
			{ID: "e3", Kind: core.KindUserMessage, Payload: core.Payload(map[string]any{"text": "now run the tests"})},
		}
		fold := handoff.Fold(branch, handoff.FoldOptions{Lang: lang})
		live, ev := start(t, fake.New(fake.Options{}))
		prompt(t, live, handoff.Instruction(fold.Lang, 0)+fold.Text)
		got := ev.entries()
		h, err := handoff.Parse(field(t, got[len(got)-1], "text"))
		if err != nil {
			t.Fatalf("%s: %v", lang, err)
		}
		if g := h.Sections[handoff.Goal].Body; !strings.Contains(g, "rename the parser") {
			t.Errorf("%s: goal %q", lang, g)
		}
		if n := h.Sections[handoff.NextStep].Body; !strings.Contains(n, "now run the tests") {
			t.Errorf("%s: next step %q", lang, n)
		}
		if bad := h.UnsupportedFiles(fold.Text); len(bad) > 0 {
			t.Errorf("%s: key files not in the material: %v", lang, bad)
		}
	}
}

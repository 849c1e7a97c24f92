package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// e2e is one isolated real-`claude` setup: a fake model server, a temp
// HOME and CLAUDE_CONFIG_DIR, and a working directory.
type e2e struct {
	fake *fakemodel.Server
	cfg  Config
	cwd  string
}

// offlineEnv is the environment harness-offline.md gives for running
// Claude Code against a fake server with no other traffic.
func offlineEnv(url, home string) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + url,
		"ANTHROPIC_API_KEY=sk-ant-dummy-for-tests",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"HOME=" + home,
	}
}

func newE2E(t testing.TB) *e2e {
	t.Helper()
	bin := adaptertest.FindBinary(t, "claude")
	fake, err := fakemodel.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	root := t.TempDir()
	home := filepath.Join(root, "home")
	cwd := filepath.Join(root, "project")
	for _, d := range []string{home, cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &e2e{fake: fake, cwd: cwd, cfg: Config{Command: bin, Env: offlineEnv(fake.URL, home), ConfigDir: filepath.Join(home, ".claude")}}
}

// collector is an EventSink that keeps everything.
type collector struct {
	mu     sync.Mutex
	events []core.Event
}

func (c *collector) sink(ev core.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
}

func (c *collector) entries(kind core.Kind) []core.NewEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []core.NewEntry
	for _, ev := range c.events {
		if ev.Entry != nil && (kind == "" || ev.Entry.Kind == kind) {
			out = append(out, *ev.Entry)
		}
	}
	return out
}

func (c *collector) sessionIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, ev := range c.events {
		if ev.NativeSessionID != "" {
			out = append(out, ev.NativeSessionID)
		}
	}
	return out
}

func payload(t *testing.T, e core.NewEntry) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatalf("payload of %s: %v", e.Kind, err)
	}
	return p
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func text(s string) []core.Content { return []core.Content{{Type: "text", Text: s}} }

func closeLive(t *testing.T, l core.Live) {
	t.Cleanup(func() { l.Close(context.Background()) })
}

// checkNativeIDsUnique fails when two entries share a NativeID.
func checkNativeIDsUnique(t *testing.T, es []core.NewEntry) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range es {
		if e.NativeID == "" {
			t.Errorf("%s entry has no NativeID: %s", e.Kind, e.Payload)
		}
		if seen[e.NativeID] {
			t.Errorf("NativeID %q used twice", e.NativeID)
		}
		seen[e.NativeID] = true
		if err := e.Validate(); err != nil {
			t.Errorf("invalid entry: %v", err)
		}
	}
}

func TestE2ETurnRenameAndModel(t *testing.T) {
	t.Parallel()
	env := newE2E(t)
	ctx := testCtx(t)
	env.fake.Enqueue(fakemodel.Reply{Text: "Hello from the fake model"})
	h := New(env.cfg)
	var c collector
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, c.sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	id := l.NativeID()
	if id == "" {
		t.Fatal("no native id after create")
	}
	res, err := l.Prompt(ctx, text("hello there"))
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "end_turn" {
		t.Errorf("stop reason %q", res.StopReason)
	}
	msgs := c.entries(core.KindAssistantMessage)
	if len(msgs) != 1 || payload(t, msgs[0])["text"] != "Hello from the fake model" {
		t.Fatalf("assistant entries: %+v", msgs)
	}
	st := c.entries(core.KindSessionStatus)
	if len(st) == 0 || payload(t, st[len(st)-1])["status"] != "turn_completed" {
		t.Errorf("no turn_completed status: %+v", st)
	}
	for _, sid := range c.sessionIDs() {
		if sid != id {
			t.Errorf("session id %q reported, want %q", sid, id)
		}
	}
	reqs := env.fake.Requests()
	if len(reqs) == 0 || !strings.Contains(string(reqs[len(reqs)-1].Body), "hello there") {
		t.Errorf("the model never saw the prompt")
	}
	checkNativeIDsUnique(t, c.entries(""))

	// Rename is stored by Claude Code as the transcript's custom title.
	if err := l.Rename(ctx, "Renamed by Bridge"); err != nil {
		t.Fatal(err)
	}
	// The effort switch, then the model switch, reach the next API request.
	var last struct {
		Model  string `json:"model"`
		Output struct {
			Effort string `json:"effort"`
		} `json:"output_config"`
	}
	if err := l.SelectModel(ctx, "", "low"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prompt(ctx, text("second")); err != nil {
		t.Fatal(err)
	}
	reqs = env.fake.Requests()
	json.Unmarshal(reqs[len(reqs)-1].Body, &last)
	if last.Output.Effort != "low" {
		t.Errorf("effort after SelectModel = %q", last.Output.Effort)
	}
	if err := l.SelectModel(ctx, "claude-sonnet-4-5", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prompt(ctx, text("third")); err != nil {
		t.Fatal(err)
	}
	reqs = env.fake.Requests()
	json.Unmarshal(reqs[len(reqs)-1].Body, &last)
	if last.Model != "claude-sonnet-4-5" {
		t.Errorf("model after SelectModel = %q", last.Model)
	}
	list, err := h.ListSessions(ctx, env.cwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].NativeID != id || list[0].Title != "Renamed by Bridge" {
		t.Errorf("ListSessions = %+v", list)
	}
	hist, err := h.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, e := range hist {
		if e.Kind == core.KindUserMessage {
			users = append(users, payload(t, e)["text"].(string))
		}
	}
	if strings.Join(users, "|") != "hello there|second|third" {
		t.Errorf("history user messages = %q", users)
	}
}

func TestE2ENativeResume(t *testing.T) {
	t.Parallel()
	env := newE2E(t)
	ctx := testCtx(t)
	env.fake.Enqueue(fakemodel.Reply{Text: "the number is 4217"})
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prompt(ctx, text("remember 4217")); err != nil {
		t.Fatal(err)
	}
	id := l.NativeID()
	l.Close(ctx)

	var c collector
	nh := New(env.cfg) // a fresh Host, as after a Bridge restart
	before := len(env.fake.Requests())
	rl, err := nh.Resume(ctx, core.ResumeRequest{CreateRequest: core.CreateRequest{Cwd: env.cwd}, NativeID: id}, c.sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, rl)
	if rl.NativeID() != id {
		t.Fatalf("resumed native id %q, want %q", rl.NativeID(), id)
	}
	if n := len(env.fake.Requests()); n != before {
		t.Errorf("proving the resume called the model %d times", n-before)
	}
	if _, err := rl.Prompt(ctx, text("what was the number?")); err != nil {
		t.Fatal(err)
	}
	for _, sid := range c.sessionIDs() {
		if sid != id {
			t.Errorf("system/init after resume reports %q, want %q", sid, id)
		}
	}
	reqs := env.fake.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "remember 4217") || !strings.Contains(body, "the number is 4217") {
		t.Errorf("the resumed turn did not carry the earlier history")
	}
}

func TestE2EResumeUnknownID(t *testing.T) {
	t.Parallel()
	env := newE2E(t)
	ctx := testCtx(t)
	bogus := "019a0000-0000-4000-8000-000000000000"
	_, err := New(env.cfg).Resume(ctx, core.ResumeRequest{CreateRequest: core.CreateRequest{Cwd: env.cwd}, NativeID: bogus}, nil)
	var re *core.ResumeError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want *core.ResumeError", err)
	}
	if want := "No conversation found with session ID: " + bogus; !strings.Contains(re.NativeText, want) {
		t.Errorf("NativeText = %q, want the harness's %q", re.NativeText, want)
	}
	if len(env.fake.Requests()) != 0 {
		t.Errorf("a failed resume called the model")
	}
}

func TestE2EManualCompact(t *testing.T) {
	t.Parallel()
	env := newE2E(t)
	ctx := testCtx(t)
	var c collector
	h := New(env.cfg)
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, c.sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	for _, p := range []string{"first: 17 apples", "second: 23 pears"} {
		if _, err := l.Prompt(ctx, text(p)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := l.(core.Compactor).Compact(ctx, "keep the fruit counts")
	if err != nil {
		t.Fatal(err)
	}
	if !res.FocusApplied {
		t.Errorf("focus not applied: %+v", res)
	}
	comps := c.entries(core.KindContextCompacted)
	if len(comps) != 1 {
		t.Fatalf("context.compacted entries: %d", len(comps))
	}
	var cp core.Compacted
	json.Unmarshal(comps[0].Payload, &cp)
	if cp.Harness != Harness || cp.Trigger != core.TriggerManual || cp.PreTokens == nil || cp.NativeID == "" || len(cp.Raw) == 0 {
		t.Errorf("compacted = %+v", cp)
	}
	var sawFocus bool
	for _, r := range env.fake.Requests() {
		if r.IsSummaryRequest() && strings.Contains(string(r.Body), "keep the fruit counts") {
			sawFocus = true
		}
	}
	if !sawFocus {
		t.Errorf("the summarisation request did not carry the focus")
	}
	// The transcript on disk holds the same boundary; importing it twice
	// gives the same native ids.
	files, _ := h.transcriptFiles(env.cwd)
	if len(files) != 1 {
		t.Fatalf("transcripts: %v", files)
	}
	a, err := h.Import(ctx, files[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.Import(ctx, files[0], nil)
	checkNativeIDsUnique(t, a.Entries)
	if len(a.Entries) != len(b.Entries) {
		t.Errorf("two imports differ: %d vs %d", len(a.Entries), len(b.Entries))
	}
	var diskComp []core.NewEntry
	for _, e := range a.Entries {
		if e.Kind == core.KindContextCompacted {
			diskComp = append(diskComp, e)
		}
	}
	if len(diskComp) != 1 || diskComp[0].NativeID != comps[0].NativeID {
		t.Errorf("transcript boundary %+v, live boundary id %q", diskComp, comps[0].NativeID)
	}
}

func TestE2EAutoCompact(t *testing.T) {
	t.Parallel()
	env := newE2E(t)
	ctx := testCtx(t)
	var c collector
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, c.sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	// The first answer reports an almost full 1M window.
	env.fake.Enqueue(fakemodel.Reply{Text: "big", InputTokens: 990000})
	if _, err := l.Prompt(ctx, text("fill the window")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prompt(ctx, text("next")); err != nil {
		t.Fatal(err)
	}
	comps := c.entries(core.KindContextCompacted)
	if len(comps) != 1 {
		t.Fatalf("context.compacted entries: %d", len(comps))
	}
	var cp core.Compacted
	json.Unmarshal(comps[0].Payload, &cp)
	if cp.Trigger != core.TriggerAuto || cp.PreTokens == nil || *cp.PreTokens < 990000 {
		t.Errorf("compacted = %+v", cp)
	}
}

func TestE2EToolUseWithPreset(t *testing.T) {
	t.Parallel()
	env := newE2E(t)
	ctx := testCtx(t)
	file := filepath.Join(env.cwd, "notes.txt")
	if err := os.WriteFile(file, []byte("the secret is 9931\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	input, _ := json.Marshal(map[string]string{"file_path": file})
	env.fake.Enqueue(
		fakemodel.Reply{Text: "Reading it.", ToolCall: &fakemodel.ToolCall{ID: "toolu_read_1", Name: "Read", Input: input}},
		fakemodel.Reply{Text: "The secret is 9931."},
	)
	var c collector
	preset := core.Preset{Name: "reader", Harness: Harness, AllowedTools: []string{"Read"}, PermissionMode: "default",
		AppendSystemPrompt: "BRIDGE-PRESET-MARKER"}
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd, Preset: preset}, c.sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	if _, err := l.Prompt(ctx, text("read notes.txt")); err != nil {
		t.Fatal(err)
	}
	started := c.entries(core.KindToolStarted)
	done := c.entries(core.KindToolCompleted)
	if len(started) != 1 || payload(t, started[0])["toolId"] != "toolu_read_1" || payload(t, started[0])["name"] != "Read" {
		t.Fatalf("tool.started = %+v", started)
	}
	if len(done) != 1 || payload(t, done[0])["toolId"] != "toolu_read_1" || !strings.Contains(payload(t, done[0])["output"].(string), "9931") {
		t.Fatalf("tool.completed = %+v", done)
	}
	reqs := env.fake.Requests()
	if !strings.Contains(string(reqs[0].Body), "BRIDGE-PRESET-MARKER") {
		t.Errorf("the preset's appended system prompt did not reach the model")
	}
	checkNativeIDsUnique(t, c.entries(""))
}

func TestE2ECancel(t *testing.T) {
	t.Parallel()
	env := newE2E(t)
	ctx := testCtx(t)
	env.fake.Enqueue(fakemodel.Reply{Hang: true})
	l, err := New(env.cfg).CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	type out struct {
		res core.TurnResult
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := l.Prompt(ctx, text("this will hang"))
		ch <- out{r, err}
	}()
	// Wait until the request reached the model, then interrupt.
	if err := env.fake.AwaitRequests(ctx, 1); err != nil {
		t.Fatal("the model was never called: ", err)
	}
	if err := l.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-ch
	if o.err != nil || o.res.StopReason != "cancelled" {
		t.Fatalf("Prompt after Cancel = %+v, %v", o.res, o.err)
	}
	// The session is still usable.
	if _, err := l.Prompt(ctx, text("again")); err != nil {
		t.Fatal(err)
	}
}

package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
)

func TestPersistenceAcrossHosts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	h1 := fake.New(fake.Options{StateDir: dir})
	ev1 := newEvents()
	l1, err := h1.CreateSession(ctx, core.CreateRequest{Cwd: "/repo", Title: "first"}, ev1.sink)
	if err != nil {
		t.Fatal(err)
	}
	id := l1.NativeID()
	prompt(t, l1, "say one\nnext say from the queue")
	goal, err := l1.(core.GoalHost).CreateGoal(ctx, core.Goal{Text: "ship it", Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := l1.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// A new host on the same directory: a new bridge process.
	h2 := fake.New(fake.Options{StateDir: dir})
	list, err := h2.ListSessions(ctx, "/repo")
	if err != nil || len(list) != 1 || list[0].NativeID != id || list[0].Title != "first" {
		t.Fatalf("ListSessions = %+v, %v", list, err)
	}
	if ws, _ := h2.Workspaces(ctx); len(ws) != 1 || ws[0].Path != "/repo" {
		t.Fatalf("Workspaces = %+v", ws)
	}
	hist, err := h2.History(ctx, id)
	if err != nil || len(hist) != 2 || hist[0].Kind != core.KindUserMessage ||
		field(t, hist[0], "text") != "say one\nnext say from the queue" || field(t, hist[1], "text") != "one" {
		t.Fatalf("History = %+v, %v", hist, err)
	}
	ev2 := newEvents()
	l2, err := h2.Resume(ctx, core.ResumeRequest{NativeID: id}, ev2.sink)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close(ctx)
	if l2.NativeID() != id {
		t.Fatalf("resumed NativeID %q, want %q", l2.NativeID(), id)
	}
	prompt(t, l2, "whatever")
	if got := ev2.entries(); len(got) != 1 || field(t, got[0], "text") != "from the queue" {
		t.Fatalf("the queued directive did not survive the restart: %+v", got)
	}
	if err := l2.(core.GoalHost).PauseGoal(ctx, goal); err != nil {
		t.Fatal(err)
	}
	// The first host reads the disk too: it sees what the second wrote.
	hist, err = h1.History(ctx, id)
	if err != nil || len(hist) != 4 {
		t.Fatalf("History via the first host = %d entries, %v", len(hist), err)
	}
	seen := map[string]bool{}
	for _, e := range hist {
		if seen[e.NativeID] {
			t.Fatalf("NativeID %q repeated across the two runs", e.NativeID)
		}
		seen[e.NativeID] = true
	}
	goals, _ := h1.Goals(id)
	if len(goals) != 1 || goals[0].Status != "paused" {
		t.Fatalf("goals = %+v", goals)
	}
	if err := h2.ArchiveSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if list, _ := h1.ListSessions(ctx, ""); len(list) != 0 {
		t.Fatalf("an archived session is still listed: %+v", list)
	}
}

func TestResumeUnknown(t *testing.T) {
	h := fake.New(fake.Options{StateDir: t.TempDir()})
	for _, id := range []string{"fake-nope", "../../etc/passwd", ""} {
		live, err := h.Resume(context.Background(), core.ResumeRequest{NativeID: id}, nil)
		var re *core.ResumeError
		if live != nil || !errors.As(err, &re) || re.NativeText != "no conversation found with session ID: "+id {
			t.Fatalf("Resume(%q) = %v, %v", id, live, err)
		}
		if !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Resume(%q) error does not wrap ErrNotFound: %v", id, err)
		}
	}
	// In memory, a session is resumable by the same host only.
	mem := fake.New(fake.Options{})
	live, _ := start(t, mem)
	if _, err := fake.New(fake.Options{}).Resume(context.Background(), core.ResumeRequest{NativeID: live.NativeID()}, nil); err == nil {
		t.Fatal("another in-memory host resumed this host's session")
	}
}

func TestCompactFocus(t *testing.T) {
	ctx := context.Background()
	for _, honour := range []bool{true, false} {
		live, ev := start(t, fake.New(fake.Options{CompactFocus: honour}))
		prompt(t, live, "usage 5000")
		res, err := live.Compact(ctx, "keep the API")
		if err != nil {
			t.Fatal(err)
		}
		if res.FocusApplied != honour || (honour == (res.FocusNote != "")) {
			t.Errorf("CompactFocus=%v: result %+v", honour, res)
		}
		got := ev.entries()
		var c core.Compacted
		if len(got) != 1 || json.Unmarshal(got[0].Payload, &c) != nil {
			t.Fatalf("entries %+v", got)
		}
		if c.Trigger != "manual" || c.Focus != "keep the API" || c.FocusApplied == nil || *c.FocusApplied != honour ||
			*c.PreTokens != 5000 || *c.PostTokens != 500 {
			t.Errorf("context.compacted %s", got[0].Payload)
		}
	}
}

func TestMissingCapabilities(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(h *fake.Host, l *fake.Live) error{
		core.CapSessionList:      func(h *fake.Host, l *fake.Live) error { _, err := h.ListSessions(ctx, ""); return err },
		core.CapSessionHistory:   func(h *fake.Host, l *fake.Live) error { _, err := h.History(ctx, l.NativeID()); return err },
		core.CapSessionModels:    func(h *fake.Host, l *fake.Live) error { _, err := h.Models(ctx); return err },
		core.CapSessionSelect:    func(h *fake.Host, l *fake.Live) error { return l.SelectModel(ctx, "fake-large", "") },
		core.CapSessionPrompt:    func(h *fake.Host, l *fake.Live) error { _, err := l.Prompt(ctx, text("hi")); return err },
		core.CapSessionCancel:    func(h *fake.Host, l *fake.Live) error { return l.Cancel(ctx) },
		core.CapSessionRename:    func(h *fake.Host, l *fake.Live) error { return l.Rename(ctx, "x") },
		core.CapWorkspaceList:    func(h *fake.Host, l *fake.Live) error { _, err := h.Workspaces(ctx); return err },
		core.CapWorkspaceArchive: func(h *fake.Host, l *fake.Live) error { return h.ArchiveSession(ctx, l.NativeID()) },
		core.CapPresetList:       func(h *fake.Host, l *fake.Live) error { _, err := h.Presets(ctx); return err },
		core.CapGoalCreate:       func(h *fake.Host, l *fake.Live) error { _, err := l.CreateGoal(ctx, core.Goal{Text: "g"}); return err },
		core.CapGoalPause:        func(h *fake.Host, l *fake.Live) error { return l.PauseGoal(ctx, "goal-1") },
		core.CapGoalClear:        func(h *fake.Host, l *fake.Live) error { return l.ClearGoal(ctx, "goal-1") },
		core.CapAttachment:       func(h *fake.Host, l *fake.Live) error { _, err := h.Attachment(ctx, l.NativeID(), "att-1"); return err },
		core.CapHistoryWindow: func(h *fake.Host, l *fake.Live) error {
			_, _, err := h.HistoryWindow(ctx, l.NativeID(), 10)
			return err
		},
		core.CapNativeResume: func(h *fake.Host, l *fake.Live) error {
			_, err := h.Resume(ctx, core.ResumeRequest{NativeID: l.NativeID()}, nil)
			return err
		},
		core.CapCompactCommand: func(h *fake.Host, l *fake.Live) error { _, err := l.Compact(ctx, ""); return err },
	}
	for name, call := range calls {
		h := fake.New(fake.Options{Missing: []string{name}})
		l, _ := start(t, h)
		if err := call(h, l); !errors.Is(err, core.ErrUnsupported) {
			t.Errorf("%s switched off: call returned %v, want ErrUnsupported", name, err)
		}
		for _, c := range h.Probe(ctx).Capabilities {
			if c.Name == name && (c.Available || c.Detail == "") {
				t.Errorf("%s switched off: probe says %+v", name, c)
			}
		}
	}
	if _, err := fake.New(fake.Options{Missing: []string{core.CapSessionCreate}}).CreateSession(ctx, core.CreateRequest{}, nil); !errors.Is(err, core.ErrUnsupported) {
		t.Errorf("session.create switched off: %v", err)
	}
	p := fake.New(fake.Options{Missing: []string{core.CapCompactCommand}, CompactFocus: true}).Probe(ctx)
	if p.Has(core.CapCompactionFocus) {
		t.Error("compaction.focus available without a compaction command")
	}
}

func TestGoals(t *testing.T) {
	ctx := context.Background()
	h := fake.New(fake.Options{GoalPauseFails: true})
	live, _ := start(t, h)
	id, err := live.CreateGoal(ctx, core.Goal{Text: "migrate", Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := live.PauseGoal(ctx, id); core.ErrorCode(err) != core.CodeHarness {
		t.Fatalf("PauseGoal with GoalPauseFails: %v", err)
	}
	if g, _ := h.Goals(live.NativeID()); g[0].Status != "active" {
		t.Fatalf("a failed pause changed the goal: %+v", g)
	}
	if err := live.ClearGoal(ctx, id); err != nil {
		t.Fatal(err)
	}
	if g, _ := h.Goals(live.NativeID()); g[0].Status != "cleared" {
		t.Fatalf("goal after clear: %+v", g)
	}
	if err := live.ClearGoal(ctx, "goal-9"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("clearing an unknown goal: %v", err)
	}
}

func TestAttachmentsAndHistoryWindow(t *testing.T) {
	ctx := context.Background()
	h := fake.New(fake.Options{})
	live, ev := start(t, h)
	img := core.Content{Type: "image", MediaType: "image/png", Data: "iVBORw0KGgo="}
	if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "what is this?"}, img}); err != nil {
		t.Fatal(err)
	}
	if s := field(t, ev.entries()[0], "text"); s != "fake: what is this? [1 image(s): image/png]" {
		t.Fatalf("echo %q", s)
	}
	prompt(t, live, "say two")
	prompt(t, live, "say three")
	hist, _ := h.History(ctx, live.NativeID())
	var user struct {
		Attachments []struct{ Ref, MediaType string } `json:"attachments"`
	}
	json.Unmarshal(hist[0].Payload, &user)
	if len(user.Attachments) != 1 {
		t.Fatalf("user.message %s", hist[0].Payload)
	}
	got, err := h.Attachment(ctx, live.NativeID(), user.Attachments[0].Ref)
	if err != nil || got != img {
		t.Fatalf("Attachment = %+v, %v", got, err)
	}
	win, more, err := h.HistoryWindow(ctx, live.NativeID(), 3)
	if err != nil || !more || len(win) != 3 || field(t, win[0], "text") != "two" {
		t.Fatalf("HistoryWindow = %d entries, more %v, %v", len(win), more, err)
	}
	if win, more, _ := h.HistoryWindow(ctx, live.NativeID(), 100); more || len(win) != 6 {
		t.Fatalf("whole window = %d entries, more %v", len(win), more)
	}
}

func TestImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "chat.jsonl")
	os.WriteFile(path, []byte(strings.Join([]string{
		`{"type":"session","id":"fake-imported","cwd":"/w","model":"fake-small","title":"old chat"}`,
		`{"type":"entry","kind":"user.message","nativeId":"u1","payload":{"text":"hi"}}`,
		`{"type":"entry","kind":"assistant.message","payload":{"text":"hello"}}`,
		`{"type":"entry","kind":"context.compacted","nativeId":"c1","payload":{"harness":"fake","trigger":"auto"}}`,
		`{"type":"entry","kind":"brand.new","nativeId":"n1","payload":{"x":1}}`,
		`{"type":"telemetry","ms":3}`,
		``,
	}, "\n")), 0o644)
	var last, total int64
	s, err := fake.New(fake.Options{}).Import(ctx, path, func(d, tot int64) { last, total = d, tot })
	if err != nil {
		t.Fatal(err)
	}
	if s.NativeID != "fake-imported" || s.Cwd != "/w" || s.Title != "old chat" || len(s.Entries) != 5 {
		t.Fatalf("imported %+v", s)
	}
	if s.Entries[1].NativeID != "fake-imported:line3" || s.Entries[3].Kind != core.KindHarnessEvent ||
		s.Entries[4].Kind != core.KindHarnessEvent || field(t, s.Entries[4], "type") != "telemetry" {
		t.Fatalf("entries %+v", s.Entries)
	}
	if last != total || total == 0 {
		t.Errorf("progress ended at %d of %d", last, total)
	}

	os.WriteFile(path, []byte("{\"type\":\"entry\",\"kind\":\"user.message\",\"payload\":{\"text\":\"a\"}}\n{not json\n"), 0o644)
	if _, err := fake.New(fake.Options{}).Import(ctx, path, nil); core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("malformed line: %v", err)
	}
	os.WriteFile(path, []byte(`{"type":"entry","kind":"tool.started","payload":{}}`), 0o644)
	if _, err := fake.New(fake.Options{}).Import(ctx, path, nil); core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "toolId") {
		t.Fatalf("entry missing a required field: %v", err)
	}
	bare := filepath.Join(dir, "bare.jsonl")
	os.WriteFile(bare, []byte("\n{\"type\":\"entry\",\"kind\":\"user.message\",\"payload\":{\"text\":\"a\"}}\n"), 0o644)
	if s, err := fake.New(fake.Options{}).Import(ctx, bare, nil); err != nil || s.NativeID != "bare" ||
		len(s.Entries) != 1 || s.Entries[0].NativeID != "bare:line2" {
		t.Fatalf("headerless import: %+v, %v", s, err)
	}
	os.WriteFile(bare, []byte("{\"type\":\"entry\",\"kind\":\"user.message\",\"payload\":{\"text\":\"a\"}}\n{\"type\":\"session\",\"id\":\"late\"}\n"), 0o644)
	if _, err := fake.New(fake.Options{}).Import(ctx, bare, nil); core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("header after an entry: %v", err)
	}
	os.WriteFile(bare, nil, 0o644)
	if _, err := fake.New(fake.Options{}).Import(ctx, bare, nil); core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("empty file: %v", err)
	}
	if _, err := fake.New(fake.Options{}).Import(ctx, filepath.Join(dir, "none.jsonl"), nil); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("missing file: %v", err)
	}

	// A session from StateDir imports as it is.
	state := t.TempDir()
	h := fake.New(fake.Options{StateDir: state})
	live, _ := start(t, h)
	prompt(t, live, "say stored\ncompact auto")
	s, err = h.Import(ctx, filepath.Join(state, live.NativeID()+".jsonl"), nil)
	if err != nil || s.NativeID != live.NativeID() || len(s.Entries) != 3 || s.Entries[2].Kind != core.KindContextCompacted {
		t.Fatalf("import of a state file: %+v, %v", s, err)
	}
}

func TestOptionsFromEnv(t *testing.T) {
	env := map[string]string{
		fake.EnvMissing: "goal.pause, native.resume", fake.EnvGauge: "1", fake.EnvWindow: "64000",
		fake.EnvCompactFocus: "true", fake.EnvGoalPauseFails: "false",
	}
	o, err := fake.OptionsFromEnv(func(k string) string { return env[k] }, "/state")
	if err != nil || len(o.Missing) != 2 || !o.Gauge || o.Window != 64000 || !o.CompactFocus || o.GoalPauseFails || o.StateDir != "/state" {
		t.Fatalf("OptionsFromEnv = %+v, %v", o, err)
	}
	for k, v := range map[string]string{fake.EnvMissing: "goal.paws", fake.EnvGauge: "yes please", fake.EnvWindow: "-3"} {
		if _, err := fake.OptionsFromEnv(func(key string) string {
			if key == k {
				return v
			}
			return ""
		}, ""); core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("%s=%q: %v, want invalid", k, v, err)
		}
	}
}

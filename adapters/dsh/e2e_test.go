package dsh_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/core"
)

func setup(t *testing.T, opts dshtest.Options) (*dshtest.Server, *dsh.Host, context.Context) {
	t.Helper()
	srv := dshtest.Start(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return srv, dsh.New(dsh.Config{BaseURL: srv.URL, PollInterval: 5 * time.Millisecond}), ctx
}

// TestEndToEnd drives the adapter against the fake DSH web server as the
// service would: doctor probe, create, prompt, history, rename, goal create
// and pause through a stale revision, /compact, and resume.
func TestEndToEnd(t *testing.T) {
	srv, h, ctx := setup(t, dshtest.Options{})

	p := h.Probe(ctx)
	if miss := p.Missing(core.RequiredCapabilities...); len(miss) != 0 {
		t.Fatalf("doctor: required capabilities missing: %v", miss)
	}
	for _, c := range p.Capabilities {
		if c.Name == core.CapHistoryWindow && (c.Available || !strings.Contains(c.Detail, "HTTP 404")) {
			t.Errorf("rc.8 serves no session.historyWindow; probe says %+v", c)
		}
	}

	rec := adaptertest.NewEvents()
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir(), Preset: core.Preset{Name: "minimal", Harness: "dsh", Agent: "minimal"}}, rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(ctx)
	id := live.NativeID()
	if !strings.HasPrefix(id, "session-") {
		t.Fatalf("native id %q", id)
	}

	res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "Say hello"}})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt: %+v %v", res, err)
	}
	if a := texts(t, rec.Entries(), core.KindAssistantMessage); len(a) != 1 || !strings.Contains(a[0], `scripted answer to "Say hello"`) {
		t.Fatalf("assistant messages after the turn: %q", a)
	}
	if u := texts(t, rec.Entries(), core.KindUserMessage); len(u) != 0 {
		t.Errorf("the prompt came back as user messages %q (the service records it)", u)
	}

	hist, err := h.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, hist)
	if u := texts(t, hist, core.KindUserMessage); len(u) != 1 || u[0] != "Say hello" {
		t.Errorf("history user messages %q", u)
	}
	// The live entries and the history entries share native ids.
	var last core.NewEntry
	for _, e := range rec.Entries() {
		if e.Kind == core.KindAssistantMessage {
			last = e
		}
	}
	found := false
	for _, e := range hist {
		found = found || (e.Kind == core.KindAssistantMessage && e.NativeID == last.NativeID)
	}
	if !found {
		t.Errorf("history's assistant message has not the live entry's native id %q", last.NativeID)
	}

	if err := live.Rename(ctx, "renamed by bridge"); err != nil {
		t.Fatal(err)
	}
	list, err := h.ListSessions(ctx, "")
	if err != nil || len(list) != 1 || list[0].Title != "renamed by bridge" {
		t.Errorf("session.list after rename: %+v %v", list, err)
	}

	// goal.create runs one goal round which blocks the goal (revision 2),
	// as recorded; a blocked goal cannot be paused; the clear with
	// revision 1 is stale, re-read and retried.
	gh := live.(core.GoalHost)
	goalID, err := gh.CreateGoal(ctx, core.Goal{Text: "Write the word done", Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		hist, _ := h.History(ctx, id)
		for _, e := range hist {
			if e.Kind == core.KindHarnessEvent && strings.Contains(string(e.Payload), `"operation":"block"`) {
				return true
			}
		}
		return false
	})
	if err := gh.PauseGoal(ctx, goalID); core.ErrorCode(err) != core.CodeConflict || !strings.Contains(err.Error(), "GOAL_INVALID_TRANSITION") {
		t.Errorf("PauseGoal of a blocked goal: %v; want a conflict carrying GOAL_INVALID_TRANSITION", err)
	}
	if _, err := gh.CreateGoal(ctx, core.Goal{Text: "second"}); core.ErrorCode(err) != core.CodeConflict || !strings.Contains(err.Error(), "GOAL_ALREADY_EXISTS") {
		t.Errorf("second goal: %v; want a conflict carrying GOAL_ALREADY_EXISTS", err)
	}
	if err := live.(core.GoalClearer).ClearGoal(ctx, goalID); err != nil {
		t.Errorf("ClearGoal: %v", err)
	}
	var clears []string
	for _, c := range srv.Calls() {
		if c.Method == "goal.clear" && c.Code != "bad-request" {
			clears = append(clears, c.Code)
		}
	}
	if len(clears) != 2 || clears[0] != "GOAL_STALE_REVISION" || clears[1] != "" {
		t.Errorf("goal.clear calls = %q, want a stale one then a successful retry", clears)
	}

	before := len(rec.Entries())
	cr, err := live.(core.Compactor).Compact(ctx, "keep the file names")
	if err != nil {
		t.Fatal(err)
	}
	if cr.FocusApplied || cr.FocusNote == "" {
		t.Errorf("compact result %+v: the focus is not applied and must say why", cr)
	}
	cs := compacted(t, rec.Entries()[before:])
	if len(cs) != 1 || cs[0].Trigger != core.TriggerManual || cs[0].PreTokens == nil || *cs[0].PreTokens <= 0 || !strings.HasPrefix(cs[0].Summary, "SUMMARY-") {
		t.Fatalf("context.compacted after /compact: %+v", cs)
	}
	checkEntries(t, rec.Entries())
	var execs int
	for _, c := range srv.Calls() {
		if c.Method == "commands/execute" && strings.Contains(string(c.Payload), `"line":"/compact"`) {
			execs++
		}
	}
	if execs != 1 {
		t.Errorf("commands/execute /compact called %d times", execs)
	}

	nr := h
	if l, err := nr.Resume(ctx, core.ResumeRequest{NativeID: "session-00000000-0000-4000-8000-000000000000"}, nil); l != nil || err == nil {
		t.Fatalf("resume of a bogus id: %v %v", l, err)
	} else {
		var re *core.ResumeError
		if !errors.As(err, &re) || !strings.Contains(re.NativeText, "not found") {
			t.Errorf("resume error %v: want a *core.ResumeError with DSH's text", err)
		}
	}
	rec2 := adaptertest.NewEvents()
	again, err := nr.Resume(ctx, core.ResumeRequest{NativeID: id}, rec2.Sink)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Prompt(ctx, []core.Content{{Type: "text", Text: "after resume"}}); err != nil {
		t.Fatal(err)
	}
	if a := texts(t, rec2.Entries(), core.KindAssistantMessage); len(a) != 1 || !strings.Contains(a[0], "after resume") {
		t.Errorf("resumed live recorded %q; want only the new turn's answer", a)
	}
	// The resumed live knows the surface from before the resume: a second
	// compaction's replace resolves to the first one's checkpoint message.
	if _, err := again.(core.Compactor).Compact(ctx, ""); err != nil {
		t.Fatal(err)
	}
	cs = compacted(t, rec2.Entries())
	var raw struct{ Replaces []string }
	if len(cs) == 1 {
		_ = json.Unmarshal(cs[0].Raw, &raw)
	}
	if len(cs) != 1 || len(raw.Replaces) < 2 || !strings.HasPrefix(raw.Replaces[0], id+"#") {
		t.Errorf("second compaction after resume: %d entries, replaces %v", len(cs), raw.Replaces)
	}
}

func waitFor(t *testing.T, ctx context.Context, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatal("condition never held")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestGoalPauseStaleTwice: when the revision is stale again after one
// re-read, PauseGoal gives up with a conflict carrying DSH's text.
func TestGoalPauseStaleTwice(t *testing.T) {
	srv, h, ctx := setup(t, dshtest.Options{StalePauses: 2, HoldTurns: true})
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gh := live.(core.GoalHost)
	id, err := gh.CreateGoal(ctx, core.Goal{Text: "x", Rounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	err = gh.PauseGoal(ctx, id)
	if core.ErrorCode(err) != core.CodeConflict || !strings.Contains(err.Error(), "GOAL_STALE_REVISION") || !strings.Contains(err.Error(), "stale goal ref") {
		t.Fatalf("PauseGoal: %v; want a conflict with DSH's stale-revision text", err)
	}
	n := 0
	for _, c := range srv.Calls() {
		if c.Method == "goal.pause" && c.Code != "bad-request" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("goal.pause called %d times, want 2 (one retry)", n)
	}
	_ = live.Cancel(ctx)
}

// TestCancelRunningTurn: Cancel ends a running turn, and Prompt reports it.
func TestCancelRunningTurn(t *testing.T) {
	_, h, ctx := setup(t, dshtest.Options{HoldTurns: true})
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan core.TurnResult, 1)
	go func() {
		res, _ := live.Prompt(ctx, []core.Content{{Type: "text", Text: "long"}})
		done <- res
	}()
	hist := func() bool {
		evs, _ := h.History(ctx, live.NativeID())
		return len(evs) > 0
	}
	waitFor(t, ctx, hist)
	if err := live.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.StopReason != "cancelled" {
			t.Errorf("stop reason %q, want cancelled", res.StopReason)
		}
	case <-ctx.Done():
		t.Fatal("Prompt did not return after Cancel")
	}
}

// TestServerDown: the probe of an unreachable server reports every
// capability missing with the reason, and calls fail as unavailable.
func TestServerDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	h := dsh.New(dsh.Config{BaseURL: url, ProbeTimeout: 2 * time.Second})
	p := h.Probe(context.Background())
	for _, c := range p.Capabilities {
		if c.Available || !strings.Contains(c.Detail, "unreachable") {
			t.Errorf("capability %+v on a dead server", c)
		}
	}
	if _, err := h.ListSessions(context.Background(), ""); core.ErrorCode(err) != core.CodeUnavailable {
		t.Errorf("ListSessions: %v", err)
	}
}

// recorded returns the recorded response of the call with rpcId id.
func recorded(t *testing.T, id string) json.RawMessage {
	t.Helper()
	f, err := os.Open(testdata("web-rpc-calls.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var c struct {
			Request  struct{ RPCID string }
			Response json.RawMessage
		}
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.Request.RPCID == id {
			return c.Response
		}
	}
	t.Fatalf("no recorded call %s", id)
	return nil
}

// TestRecordedResponses maps DSH's own recorded answers: the history after
// /compact (chunks expanded by the server) and the stale-revision error.
func TestRecordedResponses(t *testing.T) {
	answers := map[string]json.RawMessage{
		"session.history": recorded(t, "rC-4"),
		"goal.pause":      recorded(t, "rA-9"),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(answers[strings.TrimPrefix(r.URL.Path, "/api/")])
	}))
	defer srv.Close()
	h := dsh.New(dsh.Config{BaseURL: srv.URL})
	hist, err := h.History(context.Background(), webSession)
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, hist)
	cs := compacted(t, hist)
	if len(cs) != 1 || cs[0].Trigger != core.TriggerManual || *cs[0].ShadowedTokens != 444 || *cs[0].PreTokens != 1933 || cs[0].NativeID != webSession+"#compaction:"+webCompact {
		t.Errorf("compacted from the recorded history: %+v", cs)
	}
	plain, _ := dsh.ReadLog(testdata("web-rpc.session.jsonl"), nil)
	fromLog := dsh.MapLog(plain).Entries
	if len(hist) > len(fromLog) || hist[len(hist)-1].NativeID != fromLog[len(hist)-1].NativeID {
		t.Errorf("history and log map to different entries (%d vs %d)", len(hist), len(fromLog))
	}
	live, err := h.Resume(context.Background(), core.ResumeRequest{NativeID: webSession}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = live.(core.GoalHost).PauseGoal(context.Background(), "goal-925e40fe-67bb-4ab7-b160-26f41ac2abf8")
	if core.ErrorCode(err) != core.CodeConflict || !strings.Contains(err.Error(), `stale goal ref "goal-925e40fe`) {
		t.Errorf("recorded stale pause: %v", err)
	}
}

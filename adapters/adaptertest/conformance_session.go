package adaptertest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

func (s *suite) testSessionCalls(t *testing.T) {
	e := s.setup(t)
	if !needLive(t, e) {
		return
	}
	rec := newRecorder()
	live := s.start(t, e, rec)
	s.hello(t, e, live, rec)
	nativeID := live.NativeID()

	t.Run("history", func(t *testing.T) { checkHistory(t, e, nativeID) })
	t.Run("goals", func(t *testing.T) { s.checkGoals(t, e, live) })
	t.Run("compaction", func(t *testing.T) { s.checkCompaction(t, e, live, rec) })

	t.Run("rename", func(t *testing.T) {
		err := live.Rename(e.ctx, "conformance")
		if e.claims[core.CapSessionRename] {
			checkWorks(t, core.CapSessionRename, "Rename", err)
		} else {
			checkRefused(t, core.CapSessionRename, "Rename", err)
		}
	})
	t.Run("select-model", func(t *testing.T) { s.checkSelectModel(t, e, live, rec) })
	t.Run("cancel-idle", func(t *testing.T) {
		err := live.Cancel(e.ctx)
		if e.claims[core.CapSessionCancel] {
			checkNotRefused(t, core.CapSessionCancel, "Cancel", err)
		} else {
			checkRefused(t, core.CapSessionCancel, "Cancel", err)
		}
	})
	t.Run("close-archive", func(t *testing.T) { checkCloseArchive(t, e, live, nativeID) })
}

// checkHistory reads the session's history after a turn: valid entries,
// no shared native id, at least one assistant message.
func checkHistory(t *testing.T, e *env, nativeID string) {
	if !e.claims[core.CapSessionHistory] {
		_, err := e.host.History(e.ctx, nativeID)
		checkRefused(t, core.CapSessionHistory, "History", err)
		return
	}
	if nativeID == "" {
		t.Fatal("session.history is claimed available, but the session has no native id after a turn")
	}
	hist, err := e.host.History(e.ctx, nativeID)
	checkWorks(t, core.CapSessionHistory, "History", err)
	assistant := 0
	ids := map[string]bool{}
	for i, en := range hist {
		if err := en.Validate(); err != nil {
			t.Errorf("History entry %d (%s) is invalid: %v", i, en.Kind, err)
		}
		if en.NativeID != "" && ids[en.NativeID] {
			t.Errorf("History entries share NativeID %q (an import would drop one)", en.NativeID)
		}
		ids[en.NativeID] = true
		if en.Kind == core.KindAssistantMessage {
			assistant++
		}
	}
	if err == nil && assistant == 0 {
		t.Errorf("History after a prompt turn holds no assistant.message (%d entries)", len(hist))
	}
}

// checkSelectModel switches the session to a model it is not reported to
// run and, where the harness reports its model, checks that it runs it.
func (s *suite) checkSelectModel(t *testing.T, e *env, live core.Live, rec *recorder) {
	if !e.claims[core.CapSessionSelect] {
		checkRefused(t, core.CapSessionSelect, "SelectModel", live.SelectModel(e.ctx, "conformance-model", ""))
		return
	}
	if !e.claims[core.CapSessionModels] {
		t.Log("session.models is unavailable: no model to select")
		return
	}
	models, err := e.host.Models(e.ctx)
	if err != nil || len(models) == 0 {
		t.Logf("no model listed (%v): nothing to select", err)
		return
	}
	// Switch to a model the session is not reported to run.
	target := models[0].ID
	for _, m := range models {
		if !reportedModel(rec, m.ID) {
			target = m.ID
			break
		}
	}
	checkWorks(t, core.CapSessionSelect, "SelectModel", live.SelectModel(e.ctx, target, ""))
	if s.h.ReportsModel {
		s.hello(t, e, live, rec)
		if !reportedModel(rec, target) {
			t.Errorf("%s is claimed available and SelectModel(%q) returned nil, but the session never reported running %q",
				core.CapSessionSelect, target, target)
		}
	}
}

// checkCloseArchive closes the live session, then archives it.
func checkCloseArchive(t *testing.T, e *env, live core.Live, nativeID string) {
	if err := live.Close(e.ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-live.Done():
	default:
		t.Error("Done is not closed after Close returned")
	}
	if nativeID == "" {
		return
	}
	err := e.host.ArchiveSession(e.ctx, nativeID)
	if e.claims[core.CapWorkspaceArchive] {
		checkWorks(t, core.CapWorkspaceArchive, "ArchiveSession", err)
	} else {
		checkRefused(t, core.CapWorkspaceArchive, "ArchiveSession", err)
	}
}

// reportedModel says whether the session reported running model.
func reportedModel(rec *recorder, model string) bool {
	for _, ev := range rec.All() {
		if ev.Model == model {
			return true
		}
	}
	return false
}

func (s *suite) checkGoals(t *testing.T, e *env, live core.Live) {
	gh, isGoalHost := live.(core.GoalHost)
	gc, isClearer := live.(core.GoalClearer)
	goalID := "conformance-goal"
	switch {
	case e.claims[core.CapGoalCreate] && !isGoalHost:
		t.Errorf("%s is claimed available, but the live session does not implement core.GoalHost", core.CapGoalCreate)
	case e.claims[core.CapGoalCreate]:
		id, err := gh.CreateGoal(e.ctx, core.Goal{Text: "finish the conformance run", Rounds: 1})
		checkWorks(t, core.CapGoalCreate, "CreateGoal", err)
		if err == nil && id == "" {
			t.Error("CreateGoal returned an empty goal id")
		}
		if id != "" {
			goalID = id
		}
	case isGoalHost:
		_, err := gh.CreateGoal(e.ctx, core.Goal{Text: "finish the conformance run", Rounds: 1})
		checkRefused(t, core.CapGoalCreate, "CreateGoal", err)
	}
	switch {
	case e.claims[core.CapGoalPause] && !isGoalHost:
		t.Errorf("%s is claimed available, but the live session does not implement core.GoalHost", core.CapGoalPause)
	case e.claims[core.CapGoalPause]:
		checkNotRefused(t, core.CapGoalPause, "PauseGoal", gh.PauseGoal(e.ctx, goalID))
	case isGoalHost:
		checkRefused(t, core.CapGoalPause, "PauseGoal", gh.PauseGoal(e.ctx, goalID))
	}
	switch {
	case e.claims[core.CapGoalClear] && !isClearer:
		t.Errorf("%s is claimed available, but the live session does not implement core.GoalClearer", core.CapGoalClear)
	case e.claims[core.CapGoalClear]:
		checkNotRefused(t, core.CapGoalClear, "ClearGoal", gc.ClearGoal(e.ctx, goalID))
	case isClearer:
		checkRefused(t, core.CapGoalClear, "ClearGoal", gc.ClearGoal(e.ctx, goalID))
	}
}

func (s *suite) checkCompaction(t *testing.T, e *env, live core.Live, rec *recorder) {
	cp, ok := live.(core.Compactor)
	if !e.claims[core.CapCompactCommand] {
		if ok {
			_, err := cp.Compact(e.ctx, "keep the file names")
			checkRefused(t, core.CapCompactCommand, "Compact", err)
		}
		if e.claims[core.CapCompactionFocus] {
			t.Errorf("%s is claimed without %s", core.CapCompactionFocus, core.CapCompactCommand)
		}
		return
	}
	if !ok {
		t.Fatalf("%s is claimed available, but the live session does not implement core.Compactor", core.CapCompactCommand)
	}
	if s.h.ScriptCompaction != nil {
		s.h.ScriptCompaction(t)
	}
	before := len(rec.entries())
	const focus = "keep the file names"
	res, err := cp.Compact(e.ctx, focus)
	checkWorks(t, core.CapCompactCommand, "Compact", err)
	if err != nil {
		return
	}
	if e.claims[core.CapCompactionFocus] && !res.FocusApplied {
		t.Errorf("%s is claimed available, but Compact(focus) says the focus was not applied (%q)", core.CapCompactionFocus, res.FocusNote)
	}
	if !e.claims[core.CapCompactionFocus] && (res.FocusApplied || res.FocusNote == "") {
		t.Errorf("%s is claimed unavailable: Compact(focus) must say focusApplied false with a note, got %+v", core.CapCompactionFocus, res)
	}
	compacted := func(es []core.NewEntry) bool {
		for _, en := range es[min(before, len(es)):] {
			if en.Kind == core.KindContextCompacted {
				return true
			}
		}
		return false
	}
	if !rec.waitFor(e.ctx, compacted) {
		t.Fatal("Compact succeeded, but no context.compacted entry arrived")
	}
	for _, en := range rec.entries()[before:] {
		if en.Kind != core.KindContextCompacted {
			continue
		}
		if err := en.Validate(); err != nil {
			t.Errorf("context.compacted entry is invalid: %v", err)
		}
		var c core.Compacted
		if err := json.Unmarshal(en.Payload, &c); err != nil {
			t.Fatalf("context.compacted payload: %v", err)
		}
		if c.Harness != e.host.Harness() {
			t.Errorf("context.compacted harness = %q, want %q", c.Harness, e.host.Harness())
		}
		if c.Trigger != core.TriggerManual && c.Trigger != core.TriggerUnknown {
			t.Errorf("a compaction asked for by Compact has trigger %q, want manual (or unknown)", c.Trigger)
		}
		break
	}
}

func (s *suite) testEntries(t *testing.T) {
	e := s.setup(t)
	if !needLive(t, e) {
		return
	}
	rec := newRecorder()
	live := s.start(t, e, rec)
	entries := s.hello(t, e, live, rec) // taken as Prompt returned
	promptText := ""
	for _, c := range s.prompt() {
		if c.Type == "text" {
			promptText += c.Text
		}
	}
	answered := false
	for _, en := range entries {
		if en.Kind != core.KindAssistantMessage {
			continue
		}
		var p struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(en.Payload, &p) == nil && p.Text != "" {
			answered = true
		}
	}
	if !answered {
		t.Errorf("no assistant.message with non-empty text had reached the sink when Prompt returned (%d entries)", len(entries))
	}
	seen := map[string]int{}
	for i, en := range rec.entries() {
		if err := en.Validate(); err != nil {
			t.Errorf("entry %d (%s) is invalid: %v", i, en.Kind, err)
		}
		if en.NativeID != "" {
			if j, dup := seen[en.NativeID]; dup {
				t.Errorf("entries %d and %d share NativeID %q", j, i, en.NativeID)
			}
			seen[en.NativeID] = i
		}
		if en.Kind == core.KindUserMessage {
			var p struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(en.Payload, &p) == nil && p.Text == promptText {
				t.Errorf("the adapter emitted the prompt back as user.message (the service records prompts itself)")
			}
		}
	}
	if e.claims[core.CapContextGauge] {
		g := rec.waitGauge(e.ctx)
		if len(g) == 0 {
			t.Errorf("%s is claimed available, but a prompt turn reported no context reading", core.CapContextGauge)
		}
		for _, r := range g {
			if r.Used <= 0 || r.Size < 0 {
				t.Errorf("context reading %+v: want Used > 0 and Size >= 0", r)
			}
		}
	}
	if rec.overlap.Load() {
		t.Error("the sink was called from two goroutines at once")
	}
	if s.h.Expect != nil {
		s.h.Expect(t, entries)
	}
}

func (s *suite) testFailClosed(t *testing.T) {
	e := s.setup(t)
	bogus := bogusID()
	if e.claims[core.CapSessionHistory] {
		if _, err := e.host.History(e.ctx, bogus); err == nil {
			t.Errorf("History of unknown session %s succeeded; want an error", bogus)
		}
	}
	if as, ok := e.host.(core.AttachmentSource); ok && e.claims[core.CapAttachment] {
		if c, err := as.Attachment(e.ctx, bogus, "no-such-ref"); err == nil {
			t.Errorf("Attachment of an unknown session and ref succeeded (%s); want an error", c.Type)
		}
	}
	if !needLive(t, e) {
		return
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if live, err := e.host.CreateSession(cancelled, s.request(t), newRecorder().sink); err == nil || live != nil {
		if live != nil {
			closeLive(live)
		}
		t.Errorf("CreateSession with a cancelled context: live=%v err=%v; want an error and no session", live != nil, err)
	}
	rec := newRecorder()
	live := s.start(t, e, rec)
	if _, err := live.Prompt(e.ctx, []core.Content{{Type: "conformance-unknown", Text: "x"}}); err == nil {
		t.Error("Prompt with a content block of unknown type succeeded; want a clear error")
	}
	if err := live.Close(e.ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := live.Prompt(e.ctx, s.prompt()); err == nil {
		t.Error("Prompt after Close succeeded; want an error")
	}
	if err := live.Close(e.ctx); err != nil {
		t.Logf("second Close: %v", err)
	}
}

func (s *suite) testResume(t *testing.T) {
	e := s.setup(t)
	nr, ok := e.host.(core.NativeResumer)
	if !e.claims[core.CapNativeResume] || !ok {
		t.Logf("native resume is claimed unavailable (host-calls checked the refusal)")
		return
	}
	bogus := bogusID()
	rec := newRecorder()
	live, err := nr.Resume(e.ctx, core.ResumeRequest{CreateRequest: s.request(t), NativeID: bogus}, rec.sink)
	if live != nil {
		claimed := live.NativeID()
		closeLive(live)
		t.Fatalf("Resume of unknown id %s returned a Live (NativeID %q, err %v); want a *core.ResumeError", bogus, claimed, err)
	}
	var re *core.ResumeError
	if !errors.As(err, &re) {
		t.Fatalf("Resume of unknown id %s: %v; want a *core.ResumeError", bogus, err)
	}
	if re.NativeText == "" {
		t.Errorf("ResumeError carries no harness text: %v", err)
	}
	if !needLive(t, e) {
		return
	}
	first := s.start(t, e, rec)
	s.hello(t, e, first, rec)
	nativeID := first.NativeID()
	if nativeID == "" {
		t.Fatal("native resume is claimed, but the session has no native id after a turn")
	}
	if err := first.Close(e.ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	rec2 := newRecorder()
	again, err := nr.Resume(e.ctx, core.ResumeRequest{CreateRequest: s.request(t), NativeID: nativeID}, rec2.sink)
	if err != nil {
		t.Fatalf("Resume of the session just closed (%s): %v", nativeID, err)
	}
	t.Cleanup(func() { closeLive(again) })
	if got := again.NativeID(); got != nativeID {
		t.Fatalf("Resume(%s) returned a Live with NativeID %q", nativeID, got)
	}
	s.hello(t, e, again, rec2)
	if got := again.NativeID(); got != nativeID {
		t.Errorf("after a turn, the resumed Live's NativeID is %q, want %q", got, nativeID)
	}
}

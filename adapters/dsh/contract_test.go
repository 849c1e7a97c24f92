package dsh_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/adapters/dsh/dshtest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// refusals returns the refused events' contract errors, in order.
func refusals(t *testing.T, entries []core.NewEntry) []string {
	t.Helper()
	var out []string
	for _, e := range entries {
		var p struct {
			Refused string `json:"refused"`
		}
		if e.Kind == core.KindHarnessEvent && json.Unmarshal(e.Payload, &p) == nil && p.Refused != "" {
			out = append(out, p.Refused)
		}
	}
	return out
}

// TestCompactionContract holds the mapper to DSH's compaction contract:
// shadowedTokenCount is the shadowed span's count and preTokens the gauge
// (DSH's own pressure: input plus cache tokens of the newest usage); pressure
// and context-overflow stay distinct; an event that breaks the contract is
// refused with the contract's own words, never taken as a silent overwrite.
func TestCompactionContract(t *testing.T) {
	usage := `{"type":"assistant/chunk","seq":3,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":900,"outputTokens":40,"cacheReadTokens":100}}}}`
	turn1 := []string{`{"type":"turn/start","seq":0,"data":{"turn":1}}`, u1, a2, usage}
	t.Run("pressure: between steps; tokens are the span's, preTokens the gauge", func(t *testing.T) {
		evs := append(append([]string{}, turn1...), `{"type":"step/end","seq":4,"data":{"turn":1,"step":1}}`)
		evs = append(evs, bracket("p", 5, "1", 1, 2, 77)...)
		cs := compacted(t, dsh.MapLog(synth(t, evs...)).Entries)
		if len(cs) != 1 || cs[0].Trigger != core.TriggerAuto || cs[0].Cause != core.CausePressure ||
			*cs[0].ShadowedTokens != 77 || cs[0].PreTokens == nil || *cs[0].PreTokens != 1000 {
			t.Fatalf("compacted %+v", cs)
		}
	})
	t.Run("context-overflow: inside the step whose request was refused", func(t *testing.T) {
		evs := append(append([]string{}, turn1[:1]...), `{"type":"step/start","seq":1,"data":{"turn":1,"step":1}}`, a2, usage,
			`{"type":"assistant/chunk","seq":4,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"error","failure":{"code":"CONTEXT_WINDOW_EXCEEDED","message":"too long"}}}}}`)
		evs = append(evs, bracket("o", 5, "1", 2, 2, 50)...)
		cs := compacted(t, dsh.MapLog(synth(t, evs...)).Entries)
		if len(cs) != 1 || cs[0].Cause != core.CauseContextOverflow || *cs[0].PreTokens != 1000 || *cs[0].ShadowedTokens != 50 {
			t.Fatalf("compacted %+v", cs)
		}
	})

	b := bracket("c", 5, "null", 1, 2, 10) // start, summary, checkpoint, end
	summary := func(mod func(map[string]any)) string {
		var ev map[string]any
		_ = json.Unmarshal([]byte(b[1]), &ev)
		mod(ev["data"].(map[string]any))
		out, _ := json.Marshal(ev)
		return string(out)
	}
	with := func(s string, i int) []string {
		out := append([]string{u1, a2}, b...)
		out[2+i] = s
		return out
	}
	for _, c := range []struct {
		name    string
		evs     []string
		refused string
	}{
		{"repeated summary", append([]string{u1, a2}, b[0], b[1],
			strings.Replace(b[1], `"seq":6`, `"seq":7`, 1), strings.Replace(b[2], `"seq":7`, `"seq":8`, 1), strings.Replace(b[3], `"seq":8`, `"seq":9`, 1)),
			"compaction/summary repeated within one compaction"},
		{"range not the seqs' ends", with(summary(func(d map[string]any) { d["shadowedRange"] = map[string]any{"start": 1, "end": 3} }), 1),
			"compaction/summary shadowedRange must match the first and last shadowedSeqs"},
		{"no shadowed seqs", with(summary(func(d map[string]any) { d["shadowedSeqs"] = []int{} }), 1),
			"compaction/summary shadowedSeqs must be non-empty"},
		{"negative token count", with(summary(func(d map[string]any) { d["shadowedTokenCount"] = -1 }), 1),
			"compaction/summary shadowedTokenCount must be a non-negative safe integer"},
		{"fractional token count", with(summary(func(d map[string]any) { d["shadowedTokenCount"] = 1.5 }), 1),
			"compaction/summary shadowedTokenCount must be a non-negative safe integer"},
		{"summary from another command", with(summary(func(d map[string]any) { d["sourceCommandId"] = "cmd-other" }), 1),
			"compaction/summary sourceCommandId cmd-other does not match compaction/start sourceCommandId undefined"},
		{"empty sourceCommandId", with(strings.Replace(b[0], `"turn":null`, `"turn":null,"sourceCommandId":""`, 1), 0),
			"compaction/start sourceCommandId must be a non-empty string"},
		{"checkpoint of another compaction", with(strings.Replace(b[2], `"compactionId":"c"`, `"compactionId":"x"`, 1), 2),
			"compaction checkpoint id x does not match compaction/start id c"},
		{"standalone while a turn is open", append([]string{`{"type":"turn/start","seq":0,"data":{"turn":1}}`, u1, a2}, b...),
			"compaction/start is standalone but turn 1 is open"},
		{"bracket crossing turn/start", append([]string{u1, a2}, b[0], b[1], `{"type":"turn/start","seq":7,"data":{"turn":1}}`),
			"turn/start cannot cross an open standalone compaction"},
		{"bracket crossing turn/end", []string{`{"type":"turn/start","seq":0,"data":{"turn":1}}`, u1, a2,
			`{"type":"compaction/start","seq":5,"data":{"compactionId":"c","turn":1}}`, `{"type":"turn/end","seq":6,"data":{"turn":1}}`},
			"turn/end cannot cross an open compaction for turn 1"},
		{"end without a summary", append([]string{u1, a2}, b[0], b[3]), "successful compaction/end requires one compaction/summary"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := dsh.MapLog(synth(t, c.evs...))
			got := refusals(t, m.Entries)
			if len(got) == 0 || got[0] != c.refused {
				t.Fatalf("refused %q, want first %q", got, c.refused)
			}
			cs := compacted(t, m.Entries)
			if c.name == "repeated summary" {
				// The first summary stands; the repeat overwrote nothing.
				if len(cs) != 1 || cs[0].Summary != "sum c" || *cs[0].ShadowedTokens != 10 {
					t.Fatalf("compacted %+v", cs)
				}
			} else if len(cs) != 0 {
				t.Fatalf("a refused compaction reported as compacted: %+v", cs)
			}
			checkEntries(t, m.Entries)
		})
	}
}

// TestCompactFailureCodes: each of DSH's five manual compaction failures
// reaches the caller as its own Bridge error code (DSH's /compact texts, as
// the fake server answers them; busy and summary also against the real DSH
// in TestRealDSHCompactionContract).
func TestCompactFailureCodes(t *testing.T) {
	for code, want := range map[string]core.Code{"busy": core.CodeBusy, "changed": core.CodeChanged, "summary": core.CodeSummary,
		"commit": core.CodeCommit, "persistence": core.CodePersistence} {
		t.Run(code, func(t *testing.T) {
			_, h, ctx := setup(t, dshtest.Options{CompactFails: code})
			rec := adaptertest.NewEvents()
			live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, rec.Sink)
			if err != nil {
				t.Fatal(err)
			}
			defer live.Close(ctx)
			if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "Say hello"}}); err != nil {
				t.Fatal(err)
			}
			_, err = live.(core.Compactor).Compact(ctx, "")
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Code != want || !strings.Contains(ce.Message, "("+code+")") {
				t.Fatalf("Compact: %v, want code %s", err, want)
			}
			if n := len(compacted(t, rec.Entries())); (code == "persistence") != (n == 1) {
				t.Errorf("%d context.compacted entries: only persistence (closed in memory, not saved) compacted the window", n)
			}
		})
	}
}

// TestRealDSHCompactionContract drives the real DeepSeek Harness into what
// it can produce of the compaction contract: /compact while a turn runs is
// busy; a summary request the model refuses is summary (its failed bracket
// recorded, nothing compacted); a request refused for the context window
// makes DSH compact with the context-overflow trigger and retry the turn.
func TestRealDSHCompactionContract(t *testing.T) {
	model, r := startReal(t)
	var mu sync.Mutex
	overflowed, failSummary := false, false
	model.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case req.IsSummaryRequest() && failSummary:
			return fakemodel.Reply{Status: 400, ErrorMessage: "invalid request: the summary is refused"}, true
		case req.IsSummaryRequest():
			return fakemodel.Reply{Text: "SUMMARY: the earlier turns, condensed."}, true
		case strings.Contains(req.LastUserText, "Hold on"):
			return fakemodel.Reply{Hang: true}, true
		case strings.Contains(req.LastUserText, "Overflow") && !overflowed:
			overflowed = true
			return fakemodel.Reply{Status: 400, ErrorMessage: "This model's maximum context length is 1000 tokens"}, true
		}
		return fakemodel.Reply{Text: "Fine."}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h := realHost(r)
	rec := adaptertest.NewEvents()
	live, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(ctx)
	for _, q := range []string{"First question", "Second question"} {
		if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: q}}); err != nil {
			t.Fatalf("Prompt: %v\n%s", err, r.Logs())
		}
	}

	// summary: the model refuses the summary request.
	mu.Lock()
	failSummary = true
	mu.Unlock()
	before := len(rec.Entries())
	_, err = live.(core.Compactor).Compact(ctx, "")
	if core.ErrorCode(err) != core.CodeSummary {
		for _, q := range model.Requests() {
			t.Logf("model request: %.80q", q.LastUserText)
		}
		t.Fatalf("/compact with the summary refused: %v, want summary\n%s", err, r.Logs())
	}
	if cs := compacted(t, rec.Entries()[before:]); len(cs) != 0 {
		t.Errorf("a failed compaction reported as compacted: %+v", cs)
	}
	mu.Lock()
	failSummary = false
	mu.Unlock()

	// context-overflow: DSH compacts inside the refused step and retries.
	before = len(rec.Entries())
	res, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "Overflow now"}})
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Prompt after an overflow: %+v %v\n%s", res, err, r.Logs())
	}
	cs := compacted(t, rec.Entries()[before:])
	if len(cs) != 1 || cs[0].Trigger != core.TriggerAuto || cs[0].Cause != core.CauseContextOverflow || cs[0].ShadowedTokens == nil || cs[0].PreTokens == nil {
		t.Fatalf("context.compacted after a context overflow: %+v", cs)
	}
	if got := refusals(t, rec.Entries()); len(got) != 0 {
		t.Errorf("the real DSH's record was refused: %q", got)
	}

	// busy: a turn is running.
	done := make(chan error, 1)
	go func() {
		_, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: "Hold on"}})
		done <- err
	}()
	waitFor(t, ctx, func() bool {
		for _, q := range model.Requests() {
			if strings.Contains(q.LastUserText, "Hold on") {
				return true
			}
		}
		return false
	})
	// A second client of the same session, as another Bridge process
	// would be (this one waits for its turn).
	busy, err := h.Resume(ctx, core.ResumeRequest{NativeID: live.NativeID()}, adaptertest.NewEvents().Sink)
	if err != nil {
		t.Fatal(err)
	}
	_, err = busy.(core.Compactor).Compact(ctx, "")
	if core.ErrorCode(err) != core.CodeBusy {
		t.Errorf("/compact during a turn: %v, want busy", err)
	}
	// The held turn is left to the end of the test (rc.8 does not end a
	// turn whose request is still open).
}

// TestRealDSHPressureCompaction: with a 4,000-token window (DSH's settings,
// as a user would set them) and requests reported at 20,000 input tokens,
// the real DSH compacts before a step for pressure; the record says
// pressure (not context-overflow), with preTokens the gauge and the span's
// shadowedTokenCount apart. A follow-up attempt DSH itself fails (its
// summary not smaller) is kept as data, not as a compaction.
func TestRealDSHPressureCompaction(t *testing.T) {
	model, r := startReal(t)
	model.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		if req.IsSummaryRequest() {
			return fakemodel.Reply{Text: "SUMMARY: the earlier turns, condensed."}, true
		}
		return fakemodel.Reply{Text: "Fine.", InputTokens: 20000}, true
	})
	if err := r.SetContextWindow(4000); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := adaptertest.NewEvents()
	live, err := realHost(r).CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(ctx)
	// Long enough turns that an older span lies outside DSH's retained tail.
	for _, q := range []string{"First " + strings.Repeat("lorem ipsum ", 400), "Second " + strings.Repeat("dolor sit ", 400), "Third"} {
		if _, err := live.Prompt(ctx, []core.Content{{Type: "text", Text: q}}); err != nil {
			t.Fatalf("Prompt: %v\n%s", err, r.Logs())
		}
	}
	cs := compacted(t, rec.Entries())
	if len(cs) == 0 {
		t.Fatalf("no compaction with a 4,000-token window and 20,000-token requests\n%s", r.Logs())
	}
	for _, c := range cs {
		if c.Trigger != core.TriggerAuto || c.Cause != core.CausePressure || c.PreTokens == nil || *c.PreTokens != 20000 ||
			c.ShadowedTokens == nil || *c.ShadowedTokens <= 0 || *c.ShadowedTokens == 20000 {
			t.Errorf("context.compacted %+v, want auto for pressure, preTokens the 20,000-token gauge, the span's tokens apart", c)
		}
	}
	if got := refusals(t, rec.Entries()); len(got) != 0 {
		t.Errorf("the real DSH's record was refused: %q", got)
	}
}

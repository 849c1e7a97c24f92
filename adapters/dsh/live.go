package dsh

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// historyPage is how many messages one session.history page asks for
// (upstream HISTORY_PAGE_MESSAGES).
const historyPage = 60

// followPage is how many messages the newest page asks for when the reader
// already holds the session up to some seq (a running turn's poll): DSH
// serializes every event of a page and the adapter decodes it, so a poll
// that asked for historyPage messages re-sent the last 60 messages of the
// conversation every PollInterval, for the live session and for a fork
// beside it alike. Older pages are asked for only when the new events do
// not fit.
const followPage = 2

// projections is the part of session.history's projections the adapter
// reads.
type projections struct {
	AsOfSeq int64 `json:"asOfSeq"`
	Values  struct {
		Goal *struct {
			Goal *goalRef `json:"goal"`
		} `json:"goal"`
		ContextPressure *struct {
			PressureTokens int64 `json:"pressureTokens"`
			ContextWindow  int64 `json:"contextWindow"`
		} `json:"contextPressure"`
	} `json:"values"`
}

type goalRef struct {
	ID       string `json:"id"`
	Revision int64  `json:"revision"`
}

type historyValue struct {
	Events []struct {
		Event Event `json:"event"`
	} `json:"events"`
	HasMore     bool        `json:"hasMore"`
	Projections projections `json:"projections"`
}

// readSince returns the session's events after seq `after` (all of them for
// -1), in seq order, paging session.history backwards until the page
// reaches `after`, and the projections of the newest page. When after is
// set the newest page is a small one (followPage messages), and older
// pages grow from it: a poll of a running turn usually finds only a few
// new events.
func (h *Host) readSince(ctx context.Context, sessionID string, after int64) ([]Event, projections, error) {
	var pages [][]Event
	var proj projections
	before := int64(-1)
	size := historyPage
	if after >= 0 {
		size = followPage
	}
	for page := 0; page < 100000; page++ {
		payload := historyArgs{SessionID: sessionID, MaxMessages: size}
		// A follow that did not fit grows its pages by steps (2, 8, 32,
		// then historyPage), so a late poll does not read the whole
		// conversation back at once.
		size = min(size*4, historyPage)
		if before >= 0 {
			payload.BeforeSeq = &before
		}
		var hv historyValue
		if err := h.rpc.call(ctx, "session.history", payload, &hv); err != nil {
			return nil, proj, err
		}
		if page == 0 {
			proj = hv.Projections
		}
		evs := make([]Event, 0, len(hv.Events))
		for _, e := range hv.Events {
			evs = append(evs, e.Event)
		}
		pages = append(pages, evs)
		if !hv.HasMore || len(evs) == 0 {
			break
		}
		first := evs[0].First()
		if first <= after+1 || first < 0 || (before >= 0 && first >= before) {
			break
		}
		before = first
	}
	seen := map[int64]bool{}
	var out []Event
	for i := len(pages) - 1; i >= 0; i-- {
		for _, ev := range pages[i] {
			f := ev.First()
			if ev.Last() <= after || (f >= 0 && seen[f]) {
				continue
			}
			seen[f] = true
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].First() < out[j].First() })
	return out, proj, nil
}

// CreateSession (session.create) creates a DSH session in req.Cwd with the
// preset's agent, then applies the model, effort and title asked for.
func (h *Host) CreateSession(ctx context.Context, req core.CreateRequest, sink core.EventSink) (core.Live, error) {
	if err := ctx.Err(); err != nil {
		return nil, core.E(core.CodeCancelled, "dsh session.create: cancelled", errors.Join(core.ErrCancelled, err))
	}
	payload := createArgs{Cwd: req.Cwd, AgentPreset: presetAgent(req.Preset)}
	var res struct {
		SessionID   string `json:"sessionId"`
		AgentPreset string `json:"agentPreset"`
	}
	if err := h.rpc.call(ctx, "session.create", payload, &res); err != nil {
		return nil, err
	}
	if res.SessionID == "" {
		return nil, core.Errorf(core.CodeHarness, "dsh session.create returned no sessionId")
	}
	l := h.newLive(res.SessionID, -1, sink)
	l.emit(core.Event{NativeSessionID: res.SessionID})
	if err := l.setup(ctx, req); err != nil {
		_ = h.ArchiveSession(context.WithoutCancel(ctx), res.SessionID)
		return nil, err
	}
	h.forkServer() // started now, for the session's checkpoints
	return l, nil
}

// Resume binds a live session to a DSH session the server still has; the
// history read proves it exists. Otherwise it returns a *core.ResumeError
// with DSH's own text.
func (h *Host) Resume(ctx context.Context, req core.ResumeRequest, sink core.EventSink) (core.Live, error) {
	if req.NativeID == "" {
		return nil, &core.ResumeError{NativeText: "no DSH session id to resume", Err: core.Errorf(core.CodeInvalid, "dsh resume: empty session id")}
	}
	evs, _, err := h.readSince(ctx, req.NativeID, -1)
	if err != nil {
		text := err.Error()
		if re := rpcErr(err); re != nil {
			text = re.Message
		}
		return nil, &core.ResumeError{NativeText: text, Err: err}
	}
	l := h.newLive(req.NativeID, -1, sink)
	// Replay what the session already holds without recording it, so the
	// surface, the open turn and any open compaction bracket are known.
	l.priming = true
	for _, ev := range evs {
		if l.m.feed(ev) && ev.Type == "turn/start" {
			l.turn = turnOf(ev)
		}
	}
	l.priming = false
	if err := l.setup(ctx, req.CreateRequest); err != nil {
		return nil, err
	}
	h.forkServer() // started now, for the session's checkpoints
	return l, nil
}

func presetAgent(p core.Preset) string {
	if p.Agent != "" {
		return p.Agent
	}
	if p.Harness == harnessName {
		return p.Name
	}
	return ""
}

// live is one DSH session followed by this process.
type live struct {
	h    *Host
	id   string
	sink core.EventSink

	mu   sync.Mutex // one turn, compaction or catch-up at a time; guards the mapper
	m    *mapper
	mine map[string]bool // rpcIds of the prompts this process sent
	turn int64           // the current turn number
	// priming is set while a resumed session's past is replayed unrecorded.
	priming bool
	closed  bool
	done    chan struct{}
	once    sync.Once

	goalMu sync.Mutex
	goals  map[string]int64 // goal id -> last known revision

	// ended is the seq of the last turn/end seen (-1: none yet): a fork
	// made from a copy of the session's log must hold it. Read without mu,
	// as a fork runs beside the live turn.
	ended atomic.Int64

	copyMu   sync.Mutex
	copy     *logCopy // the log's copy on the fork server whose home is copyHome
	copyHome string
}

var (
	_ core.Live        = (*live)(nil)
	_ core.GoalHost    = (*live)(nil)
	_ core.GoalClearer = (*live)(nil)
	_ core.Compactor   = (*live)(nil)
)

func (h *Host) newLive(id string, lastSeq int64, sink core.EventSink) *live {
	if sink == nil {
		sink = func(core.Event) {}
	}
	l := &live{h: h, id: id, sink: sink, mine: map[string]bool{}, done: make(chan struct{}), goals: map[string]int64{}}
	l.m = newMapper(id, func(e core.NewEntry) {
		if !l.priming {
			l.emit(core.Event{Entry: &e})
		}
	})
	l.m.last = lastSeq
	l.ended.Store(-1)
	l.m.onTurnEnd = func(seq int64) { l.ended.Store(seq) }
	l.m.onModel = func(model string) { l.emit(core.Event{Model: model}) }
	l.m.ownPrompt = func(rpcID string) bool { return l.mine[rpcID] }
	return l
}

func (l *live) emit(ev core.Event) { l.sink(ev) }

func (l *live) setup(ctx context.Context, req core.CreateRequest) error {
	model := req.Model
	if model == "" {
		model = req.Preset.Model
	}
	effort := req.Effort
	if effort == "" {
		effort = req.Preset.Effort
	}
	if model != "" || effort != "" {
		if err := l.SelectModel(ctx, model, effort); err != nil {
			return err
		}
	}
	if req.Title != "" {
		if err := l.Rename(ctx, req.Title); err != nil {
			return err
		}
	}
	return nil
}

// NativeID returns the DSH session id.
func (l *live) NativeID() string { return l.id }

func (l *live) ensureOpen(what string) error {
	select {
	case <-l.done:
		return core.Errorf(core.CodeInvalid, "dsh %s: the live session %s is closed", what, l.id)
	default:
		return nil
	}
}

// prompt content as DSH takes it.
func promptContent(content []core.Content) ([]promptBlock, error) {
	var out []promptBlock
	for i, c := range content {
		switch c.Type {
		case "text":
			out = append(out, promptBlock{Type: "text", Text: &c.Text})
		case "image":
			if c.Data == "" || c.MediaType == "" {
				return nil, core.Errorf(core.CodeInvalid, "dsh prompt: image block %d needs mediaType and base64 data", i)
			}
			out = append(out, promptBlock{Type: "image", MediaType: c.MediaType, Data: c.Data})
		default:
			return nil, core.Errorf(core.CodeInvalid, "dsh prompt: content block %d has unknown type %q (text or image)", i, c.Type)
		}
	}
	if len(out) == 0 {
		return nil, core.Errorf(core.CodeInvalid, "dsh prompt: no content")
	}
	return out, nil
}

// Prompt (session.prompt) queues the prompt and follows the session's
// history until the turn holding it ends.
func (l *live) Prompt(ctx context.Context, content []core.Content) (core.TurnResult, error) {
	if err := l.ensureOpen("session.prompt"); err != nil {
		return core.TurnResult{}, err
	}
	blocks, err := promptContent(content)
	if err != nil {
		return core.TurnResult{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Record what happened since the last turn (goal rounds, other clients)
	// before this prompt's events.
	if _, err := l.catchUp(ctx); err != nil {
		return core.TurnResult{}, err
	}
	rpcID := l.h.rpc.nextID()
	l.mine[rpcID] = true
	var res struct {
		Accepted *bool `json:"accepted"`
	}
	if _, err := l.h.rpc.callID(ctx, rpcID, "session.prompt",
		promptArgs{SessionID: l.id, Mode: "queue", Content: blocks}, &res); err != nil {
		return core.TurnResult{}, err
	}
	if res.Accepted != nil && !*res.Accepted {
		return core.TurnResult{}, core.Errorf(core.CodeHarness, "dsh session.prompt: DSH did not accept the prompt")
	}
	ourTurn, spliced := int64(-1), false
	for {
		evs, proj, err := l.h.readSince(ctx, l.id, l.m.last)
		if err != nil {
			return core.TurnResult{}, err
		}
		for _, ev := range evs {
			if !l.m.feed(ev) {
				continue
			}
			switch ev.Type {
			case "agent/inbox/spliced":
				// The prompt entered the inbox; the next turn to start takes it.
				spliced = spliced || carries(ev, rpcID)
			case "turn/start":
				l.turn = turnOf(ev)
				if spliced && ourTurn < 0 {
					ourTurn = l.turn
				}
			case "user/message":
				var d struct {
					Source messageSource `json:"source"`
				}
				if json.Unmarshal(ev.Data, &d) == nil && d.Source.RPCID == rpcID {
					ourTurn = l.turn
				}
			case "turn/end":
				if ourTurn >= 0 && turnOf(ev) == ourTurn {
					l.gauge(proj)
					return core.TurnResult{StopReason: stopReason(ev)}, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return core.TurnResult{}, core.E(core.CodeCancelled, "dsh session.prompt: stopped waiting for the turn", errors.Join(core.ErrCancelled, ctx.Err()))
		case <-time.After(l.h.cfg.PollInterval):
		}
	}
}

// catchUp maps the events since the last one seen.
func (l *live) catchUp(ctx context.Context) (projections, error) {
	evs, proj, err := l.h.readSince(ctx, l.id, l.m.last)
	if err != nil {
		return proj, err
	}
	for _, ev := range evs {
		if l.m.feed(ev) && ev.Type == "turn/start" {
			l.turn = turnOf(ev)
		}
	}
	return proj, nil
}

func (l *live) gauge(p projections) {
	if cp := p.Values.ContextPressure; cp != nil && cp.PressureTokens > 0 {
		l.emit(core.Event{Gauge: &core.Gauge{Used: cp.PressureTokens, Size: cp.ContextWindow}})
	}
}

// carries reports whether an inbox splice inserted the prompt sent as rpcID.
func carries(ev Event, rpcID string) bool {
	var d struct {
		Inserted []struct {
			Source messageSource `json:"source"`
		} `json:"inserted"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	for _, in := range d.Inserted {
		if in.Source.RPCID == rpcID {
			return true
		}
	}
	return false
}

func turnOf(ev Event) int64 {
	var d struct {
		Turn int64 `json:"turn"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	return d.Turn
}

// stopReason maps turn/end's reason.kind.
func stopReason(ev Event) string {
	var d struct {
		Reason struct {
			Kind string `json:"kind"`
		} `json:"reason"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	switch k := d.Reason.Kind; k {
	case "completed", "":
		return "end_turn"
	case "cancelled", "canceled", "aborted", "interrupted":
		return "cancelled"
	case "error", "failed":
		return "error"
	default:
		return k
	}
}

// Cancel (session.cancel) interrupts the running turn.
func (l *live) Cancel(ctx context.Context) error {
	return l.h.rpc.call(ctx, "session.cancel", sessionArgs{SessionID: l.id}, nil)
}

// SelectModel (session.selectModel) switches model and/or reasoning effort.
// model is "<provider>/<model>" (as Models lists it) or a bare model id
// looked up in the session's catalog; "" keeps the current model.
func (l *live) SelectModel(ctx context.Context, model, effort string) error {
	if err := l.ensureOpen("session.selectModel"); err != nil {
		return err
	}
	provider, id, ok := strings.Cut(model, "/")
	if !ok {
		provider, id = "", model
	}
	if provider == "" {
		cat, err := l.h.catalog(ctx, l.id)
		if err != nil {
			return err
		}
		if id == "" {
			provider, id = cat.Current.Provider, cat.Current.Model
		}
		for _, g := range cat.Groups {
			for _, m := range g.Models {
				if provider == "" && m.ID == id {
					provider = g.ID
				}
			}
		}
		if provider == "" {
			return core.Errorf(core.CodeInvalid, "dsh session.selectModel: model %q is not in the session's catalog", model)
		}
	}
	payload := selectModelArgs{SessionID: l.id, Provider: provider, Model: id, ReasoningEffort: effort}
	return l.h.rpc.call(ctx, "session.selectModel", payload, nil)
}

// Rename (session.rename) renames the DSH session.
func (l *live) Rename(ctx context.Context, title string) error {
	return l.h.rpc.call(ctx, "session.rename", renameArgs{SessionID: l.id, Title: title}, nil)
}

// Done is closed by Close (the DSH server, not this process, runs the
// session).
func (l *live) Done() <-chan struct{} { return l.done }

// Exit reports a clean detach.
func (l *live) Exit() core.ExitInfo { return core.ExitInfo{} }

// Close detaches from the session; the session stays on the DSH server.
func (l *live) Close(ctx context.Context) error {
	l.once.Do(func() { close(l.done) })
	return nil
}

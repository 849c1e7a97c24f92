package service

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// liveSession is a running harness session and what Bridge tracks about it.
type liveSession struct {
	svc       *Service
	sessionID string
	host      core.BridgeHost
	preset    core.Preset // answers approvals nobody else answers

	approvals approvals // open permission requests, "always" answers

	live    core.Live
	closing bool

	turn turnGate // one turn (prompt, checkpoint, compaction) at a time (turn.go)

	// The sink queues events; a drainer goroutine records them in batches
	// (one transaction for a run of entries), so a harness that reports
	// faster than one commit per event is not slowed to the store's pace.
	order    sync.Mutex   // held while events are recorded and by appendInOrder
	qmu      sync.Mutex   // guards queue, recorded, draining
	idle     *sync.Cond   // on qmu: the queue was drained
	queue    []core.Event // events not recorded yet
	recorded bool         // the session row exists; events can be recorded
	draining bool         // a drainer goroutine is running
	mute     muteState    // on qmu: which queued events are not announced (see cancelmute.go)

	mu          sync.Mutex // guards the fields below
	capture     *strings.Builder
	lastCompact string // id of the newest context.compacted entry
	gauge       *core.Gauge
	// controllerQueued: a controller checkpoint is waiting to run.
	controllerQueued bool
	// openTools are the tool calls recorded as started and not completed,
	// in start order; closed as abandoned when the process ends.
	openTools []string
	// plan follows the harness's plan; stepsCompleted counts the steps
	// completed since the current prompt began.
	plan           core.PlanTracker
	stepsCompleted int
	// idleTimer suspends the session when it stays idle.
	idleTimer *time.Timer
	// autoRunning counts controller checkpoints and idle suspensions under
	// way; turns counts the prompts begun.
	autoRunning int
	turns       int
}

// newLive returns a liveSession for sessionID; recorded says whether its
// session row exists yet.
func newLive(s *Service, sessionID string, h core.BridgeHost, recorded bool) *liveSession {
	l := &liveSession{svc: s, sessionID: sessionID, host: h, recorded: recorded, turn: newTurnGate()}
	l.idle = sync.NewCond(&l.qmu)
	return l
}

// sink is the EventSink handed to the adapter. It queues the event and
// returns; events are recorded in order, those that arrive before the
// session row exists once it does. A failing append is logged, never fatal
// to the harness.
func (l *liveSession) sink(ev core.Event) {
	l.qmu.Lock()
	l.queue = append(l.queue, ev)
	l.mute.queued++
	start := l.recorded && !l.draining
	if start {
		l.draining = true
	}
	l.qmu.Unlock()
	if start {
		go l.drain()
	}
}

// drain records queued events until the queue is empty.
func (l *liveSession) drain() {
	for {
		l.qmu.Lock()
		batch := l.queue
		l.queue = nil
		if len(batch) == 0 {
			l.draining = false
			l.idle.Broadcast()
			l.qmu.Unlock()
			return
		}
		first := l.mute.take(len(batch))
		l.qmu.Unlock()
		l.order.Lock()
		l.record(batch, first)
		l.order.Unlock()
	}
}

// flush waits until every event queued so far is recorded.
func (l *liveSession) flush() {
	l.qmu.Lock()
	for l.draining {
		l.idle.Wait()
	}
	l.qmu.Unlock()
}

// markRecorded records the events held back until the session row existed.
func (l *liveSession) markRecorded() {
	l.qmu.Lock()
	l.recorded = true
	start := len(l.queue) > 0 && !l.draining
	if start {
		l.draining = true
	}
	l.qmu.Unlock()
	if start {
		go l.drain()
	}
	l.flush()
	go l.watch()
	l.svc.startIdleClock(l)
}

// appendInOrder appends entries after every event already reported, then
// tells the client.
func (l *liveSession) appendInOrder(ctx context.Context, es ...core.NewEntry) ([]core.Entry, error) {
	l.flush()
	l.order.Lock()
	defer l.order.Unlock()
	return l.svc.appendEntries(ctx, l.sessionID, es...)
}

// record handles a batch of events in order: each run of entries is
// appended in one transaction. first numbers the batch's first event (see
// muteState).
func (l *liveSession) record(batch []core.Event, first int64) {
	var run []core.NewEntry
	runFirst := first
	for i, ev := range batch {
		if len(run) == 0 {
			runFirst = first + int64(i)
		}
		if ev.Entry != nil {
			run = append(run, *ev.Entry)
		}
		if ev.Entry == nil || ev.Model != "" {
			l.appendRun(run, runFirst)
			run = nil
			l.handle(ev)
		}
	}
	l.appendRun(run, runFirst)
}

// appendRun appends entries in one transaction; when that fails (one bad
// entry), each is appended alone so the others are kept. The client is told
// of each, unless it belongs to a cancelled turn's backlog (first numbers
// the run's first event).
func (l *liveSession) appendRun(run []core.NewEntry, first int64) {
	if len(run) == 0 {
		return
	}
	ctx := context.Background()
	run = core.PriceUsage(l.svc.opts.Prices, run) // the usage ledger (usage.go)
	out, err := l.svc.opts.Store.Append(ctx, l.sessionID, run...)
	if err != nil && len(run) > 1 {
		out = out[:0]
		for _, e := range run {
			one, err := l.svc.opts.Store.Append(ctx, l.sessionID, e)
			if err != nil {
				l.svc.opts.Notifier.Log(2, fmt.Sprintf("session %s: could not record %s: %v", l.sessionID, e.Kind, err))
				continue
			}
			out = append(out, one...)
		}
	} else if err != nil {
		l.svc.opts.Notifier.Log(2, fmt.Sprintf("session %s: could not record %s: %v", l.sessionID, run[0].Kind, err))
		return
	}
	l.mu.Lock()
	for _, e := range out {
		switch e.Kind {
		case core.KindToolStarted:
			l.openTools = append(l.openTools, memberString(e.Payload, "toolId"))
		case core.KindToolCompleted:
			l.openTools = removeFirst(l.openTools, memberString(e.Payload, "toolId"))
		case core.KindPlanUpdated:
			if p, ok := core.ParsePlan(e.Payload); ok {
				l.stepsCompleted += l.plan.Apply(p)
			}
		}
		if e.Kind == core.KindAssistantMessage && l.capture != nil {
			l.capture.WriteString(payloadText(e.Payload))
			l.capture.WriteString("\n")
		}
		if e.Kind == core.KindContextCompacted {
			l.lastCompact = e.ID
		}
	}
	l.mu.Unlock()
	for i, e := range out {
		if l.quiet(first + int64(i)) {
			continue
		}
		l.svc.announce(e)
	}
}

// handle records an event that is not an entry (gauge, native id, model).
func (l *liveSession) handle(ev core.Event) {
	ctx := context.Background()
	st := l.svc.opts.Store
	switch {
	case ev.Gauge != nil:
		l.mu.Lock()
		g := *ev.Gauge
		l.gauge = &g
		l.mu.Unlock()
		l.svc.onGauge(l, g)
		if gn, ok := l.svc.opts.Notifier.(GaugeNotifier); ok {
			gn.Gauge(l.sessionID, g)
		}
	case ev.NativeSessionID != "":
		if _, err := st.PatchSession(ctx, l.sessionID, core.SessionPatch{NativeSessionID: core.Ptr(ev.NativeSessionID)}); err != nil {
			l.svc.opts.Notifier.Log(2, fmt.Sprintf("session %s: could not record native id: %v", l.sessionID, err))
		}
	}
	if ev.Model != "" {
		if _, err := st.PatchSession(ctx, l.sessionID, core.SessionPatch{Model: core.Ptr(ev.Model)}); err != nil {
			l.svc.opts.Notifier.Log(2, fmt.Sprintf("session %s: could not record model: %v", l.sessionID, err))
		}
	}
}

// watch records how the harness process ended, unless Bridge closed it.
func (l *liveSession) watch() {
	<-l.live.Done()
	l.svc.mu.Lock()
	if l.svc.live[l.sessionID] == l {
		delete(l.svc.live, l.sessionID)
	}
	closing := l.closing
	l.svc.mu.Unlock()
	if closing {
		return
	}
	defer l.svc.releaseLease(l.sessionID)
	x := l.live.Exit()
	payload := map[string]any{"status": "stopped", "exitCode": x.Code}
	if x.StderrTail != "" {
		payload["stderrTail"] = x.StderrTail
	}
	if x.Err != "" {
		payload["error"] = x.Err
	}
	l.flush()
	l.order.Lock()
	defer l.order.Unlock()
	es := append(l.abandonTools(), core.NewEntry{Kind: core.KindSessionStatus, Payload: core.Payload(payload)})
	out, err := l.svc.opts.Store.Append(context.Background(), l.sessionID, es...)
	if err != nil {
		l.svc.opts.Notifier.Log(1, fmt.Sprintf("session %s: harness stopped (exit %d) and recording it failed: %v", l.sessionID, x.Code, err))
		return
	}
	l.svc.announce(out...)
	l.svc.opts.Notifier.Log(2, fmt.Sprintf("session %s: harness %s stopped with exit code %d", l.sessionID, l.host.Harness(), x.Code))
}

// alive reports whether the harness process is still running.
func (l *liveSession) alive() bool {
	select {
	case <-l.live.Done():
		return false
	default:
		return true
	}
}

func (l *liveSession) close(ctx context.Context) error {
	l.mu.Lock()
	if l.idleTimer != nil {
		l.idleTimer.Stop()
	}
	l.mu.Unlock()
	l.approvals.cancelAll(errSessionClosed)
	l.svc.mu.Lock()
	l.closing = true
	if l.svc.live[l.sessionID] == l {
		delete(l.svc.live, l.sessionID)
	}
	l.svc.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := l.live.Close(ctx)
	l.recordAbandoned(context.WithoutCancel(ctx))
	l.svc.releaseLease(l.sessionID)
	return err
}

// abandonedOutput is the output of a tool call closed because its process
// ended.
const abandonedOutput = "the harness process ended before the tool call completed"

// abandonTools returns a tool.completed {abandoned: true} entry for each
// tool call still open, and forgets them. The caller holds l.order.
func (l *liveSession) abandonTools() []core.NewEntry {
	l.mu.Lock()
	open := l.openTools
	l.openTools = nil
	l.mu.Unlock()
	var es []core.NewEntry
	for _, id := range open {
		es = append(es, core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]any{
			"toolId": id, "abandoned": true, "isError": true, "output": abandonedOutput})})
	}
	return es
}

// recordAbandoned closes, in the record, the tool calls a process Bridge
// stopped left open.
func (l *liveSession) recordAbandoned(ctx context.Context) {
	l.qmu.Lock()
	recorded := l.recorded
	l.qmu.Unlock()
	if !recorded {
		return
	}
	l.flush()
	l.order.Lock()
	defer l.order.Unlock()
	es := l.abandonTools()
	if len(es) == 0 {
		return
	}
	out, err := l.svc.opts.Store.Append(ctx, l.sessionID, es...)
	if err != nil {
		l.svc.opts.Notifier.Log(2, fmt.Sprintf("session %s: could not close %d abandoned tool calls: %v", l.sessionID, len(es), err))
		return
	}
	l.svc.announce(out...)
}

// removeFirst removes the first occurrence of id from list.
func removeFirst(list []string, id string) []string {
	for i, x := range list {
		if x == id {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// memberString returns a top-level string member of a JSON object payload.
func memberString(raw []byte, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(m[key], &v)
	return v
}

// liveFor returns the running harness session of sessionID, or nil.
func (s *Service) liveFor(sessionID string) *liveSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.live[sessionID]
	if l != nil && !l.alive() {
		return nil
	}
	return l
}

// startLive starts (or natively resumes, when native != "") a harness
// session for the Bridge session sess and registers it.
//
// When recorded is false the session row does not exist yet: events wait
// until the caller has created it and called markRecorded.
func (s *Service) startLive(ctx context.Context, h core.BridgeHost, sess core.Session, preset core.Preset, native string, recorded bool) (*liveSession, error) {
	if err := s.claimLease(ctx, sess.ID); err != nil {
		return nil, err
	}
	l := newLive(s, sess.ID, h, recorded)
	l.preset = preset
	req := core.CreateRequest{Cwd: sess.Cwd, Preset: preset, Model: sess.Model, Effort: sess.Effort, Title: sess.Title,
		Approve: l.approve}
	var (
		live core.Live
		err  error
	)
	if native != "" {
		r, ok := h.(core.NativeResumer)
		if !ok {
			return nil, core.Errorf(core.CodeUnavailable, "harness %q cannot resume natively", h.Harness())
		}
		live, err = r.Resume(ctx, core.ResumeRequest{CreateRequest: req, NativeID: native}, l.sink)
	} else {
		live, err = h.CreateSession(ctx, req, l.sink)
	}
	if err != nil {
		s.releaseLease(sess.ID)
		return nil, err
	}
	l.live = live
	if id := live.NativeID(); id != "" && recorded {
		if _, err := s.opts.Store.PatchSession(ctx, sess.ID, core.SessionPatch{NativeSessionID: core.Ptr(id)}); err != nil {
			_ = live.Close(ctx)
			return nil, fmt.Errorf("record native session id: %w", err)
		}
	}
	s.mu.Lock()
	if old := s.live[sess.ID]; old != nil {
		old.closing = true
		go old.live.Close(context.Background())
	}
	s.live[sess.ID] = l
	s.mu.Unlock()
	if recorded {
		go l.watch()
		s.startIdleClock(l)
	}
	s.recordHarnessVersion(ctx, h, sess.ID)
	return l, nil
}

// payloadText returns a payload's "text" member.
func payloadText(p []byte) string {
	var v struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(p, &v)
	return v.Text
}

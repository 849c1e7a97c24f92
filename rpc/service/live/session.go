package live

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
)

// Session is a running harness session and what Bridge tracks about it.
type Session struct {
	env   *Env
	table *Table

	ID     string
	Host   core.BridgeHost
	Preset core.Preset // answers approvals nobody else answers
	// Harness is the running harness session (set by Start).
	Harness core.Live
	// Turn is the session's one turn at a time (a prompt, a checkpoint, a
	// compaction, a suspension).
	Turn TurnGate

	approvals approvals // open permission requests, "always" answers
	closing   bool      // guarded by table.mu

	// The sink queues events; a drainer goroutine records them in batches
	// (one transaction for a run of entries), so a harness that reports
	// faster than one commit per event is not slowed to the store's pace.
	order    sync.Mutex   // held while events are recorded and by AppendInOrder
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
	// idleTimer suspends the session when it stays idle for idleAfter.
	idleTimer *time.Timer
	idleAfter time.Duration
	// autoRunning counts controller checkpoints and idle suspensions under
	// way; turns counts the prompts begun.
	autoRunning int
	turns       int
}

// Sink is the EventSink handed to the adapter. It queues the event and
// returns; events are recorded in order, those that arrive before the
// session row exists once it does. A failing append is logged, never fatal
// to the harness.
func (l *Session) Sink(ev core.Event) {
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
func (l *Session) drain() {
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

// Flush waits until every event queued so far is recorded.
func (l *Session) Flush() {
	l.qmu.Lock()
	for l.draining {
		l.idle.Wait()
	}
	l.qmu.Unlock()
}

// MarkRecorded records the events held back until the session row existed.
func (l *Session) MarkRecorded() {
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
	l.Flush()
	go l.Watch()
	l.env.Recorded(l)
}

// AppendInOrder appends entries after every event already reported, then
// tells the client.
func (l *Session) AppendInOrder(ctx context.Context, es ...core.NewEntry) ([]core.Entry, error) {
	l.Flush()
	l.order.Lock()
	defer l.order.Unlock()
	out, err := l.env.Store.Append(ctx, l.ID, es...)
	if err != nil {
		return nil, err
	}
	l.env.Announce(out...)
	return out, nil
}

// record handles a batch of events in order: each run of entries is
// appended in one transaction. first numbers the batch's first event (see
// muteState).
func (l *Session) record(batch []core.Event, first int64) {
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
func (l *Session) appendRun(run []core.NewEntry, first int64) {
	if len(run) == 0 {
		return
	}
	ctx := context.Background()
	run = core.PriceUsage(l.env.Prices, run) // the usage ledger (usage.go)
	out, err := l.env.Store.Append(ctx, l.ID, run...)
	if err != nil && len(run) > 1 {
		out = out[:0]
		for _, e := range run {
			one, err := l.env.Store.Append(ctx, l.ID, e)
			if err != nil {
				l.env.Notifier.Log(2, fmt.Sprintf("session %s: could not record %s: %v", l.ID, e.Kind, err))
				continue
			}
			out = append(out, one...)
		}
	} else if err != nil {
		l.env.Notifier.Log(2, fmt.Sprintf("session %s: could not record %s: %v", l.ID, run[0].Kind, err))
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
		l.env.Announce(e)
	}
}

// handle records an event that is not an entry (gauge, native id, model).
func (l *Session) handle(ev core.Event) {
	ctx := context.Background()
	st := l.env.Store
	switch {
	case ev.Gauge != nil:
		l.mu.Lock()
		g := *ev.Gauge
		l.gauge = &g
		l.mu.Unlock()
		l.env.Gauge(l, g)
		if gn, ok := l.env.Notifier.(peer.GaugeNotifier); ok {
			gn.Gauge(l.ID, g)
		}
	case ev.NativeSessionID != "":
		if _, err := st.PatchSession(ctx, l.ID, core.SessionPatch{NativeSessionID: core.Ptr(ev.NativeSessionID)}); err != nil {
			l.env.Notifier.Log(2, fmt.Sprintf("session %s: could not record native id: %v", l.ID, err))
		}
	}
	if ev.Model != "" {
		if _, err := st.PatchSession(ctx, l.ID, core.SessionPatch{Model: core.Ptr(ev.Model)}); err != nil {
			l.env.Notifier.Log(2, fmt.Sprintf("session %s: could not record model: %v", l.ID, err))
		}
	}
}

// Watch records how the harness process ended, unless Bridge closed it.
func (l *Session) Watch() {
	<-l.Harness.Done()
	closing := l.table.remove(l, false)
	if closing {
		return
	}
	defer l.env.Stopped(l)
	x := l.Harness.Exit()
	payload := core.StatusPayload{Status: "stopped", ExitCode: &x.Code, StderrTail: x.StderrTail, Error: x.Err}
	l.Flush()
	l.order.Lock()
	defer l.order.Unlock()
	es := append(l.abandonTools(), core.NewEntry{Kind: core.KindSessionStatus, Payload: core.Payload(payload)})
	out, err := l.env.Store.Append(context.Background(), l.ID, es...)
	if err != nil {
		l.env.Notifier.Log(1, fmt.Sprintf("session %s: harness stopped (exit %d) and recording it failed: %v", l.ID, x.Code, err))
		return
	}
	l.env.Announce(out...)
	l.env.Notifier.Log(2, fmt.Sprintf("session %s: harness %s stopped with exit code %d", l.ID, l.Host.Harness(), x.Code))
}

// Alive reports whether the harness process is still running.
func (l *Session) Alive() bool {
	select {
	case <-l.Harness.Done():
		return false
	default:
		return true
	}
}

// Close stops the harness session, ends its pending approvals and closes,
// in the record, the tool calls it left open.
func (l *Session) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.idleTimer != nil {
		l.idleTimer.Stop()
	}
	l.mu.Unlock()
	l.approvals.cancelAll(errSessionClosed)
	l.table.remove(l, true)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := l.Harness.Close(ctx)
	l.recordAbandoned(context.WithoutCancel(ctx))
	l.env.Stopped(l)
	return err
}

// abandonedOutput is the output of a tool call closed because its process
// ended.
const abandonedOutput = "the harness process ended before the tool call completed"

// abandonTools returns a tool.completed {abandoned: true} entry for each
// tool call still open, and forgets them. The caller holds l.order.
func (l *Session) abandonTools() []core.NewEntry {
	l.mu.Lock()
	open := l.openTools
	l.openTools = nil
	l.mu.Unlock()
	var es []core.NewEntry
	for _, id := range open {
		es = append(es, core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(core.ToolCompletedPayload{
			ToolID: id, Abandoned: true, IsError: true, Output: abandonedOutput})})
	}
	return es
}

// recordAbandoned closes, in the record, the tool calls a process Bridge
// stopped left open.
func (l *Session) recordAbandoned(ctx context.Context) {
	l.qmu.Lock()
	recorded := l.recorded
	l.qmu.Unlock()
	if !recorded {
		return
	}
	l.Flush()
	l.order.Lock()
	defer l.order.Unlock()
	es := l.abandonTools()
	if len(es) == 0 {
		return
	}
	out, err := l.env.Store.Append(ctx, l.ID, es...)
	if err != nil {
		l.env.Notifier.Log(2, fmt.Sprintf("session %s: could not close %d abandoned tool calls: %v", l.ID, len(es), err))
		return
	}
	l.env.Announce(out...)
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

// payloadText returns a payload's "text" member.
func payloadText(p []byte) string {
	var v struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(p, &v)
	return v.Text
}

package fake

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/core"
)

// compacted emits a context.compacted entry and lowers the usage.
func (l *Live) compacted(trigger core.CompactionTrigger, pre, post int64, focus string, applied *bool) {
	l.mu.Lock()
	if pre == 0 && post == 0 {
		pre, post = l.used, l.used/10
	}
	l.used = post
	l.mu.Unlock()
	c := core.Compacted{Harness: Harness, Trigger: trigger, PreTokens: &pre, PostTokens: &post,
		NativeID: l.nextID(), Summary: fmt.Sprintf("fake summary (%d tokens before)", pre),
		Focus: focus, FocusApplied: applied,
		Raw: core.Payload(struct {
			Type    string                 `json:"type"`
			Trigger core.CompactionTrigger `json:"trigger"`
			Pre     int64                  `json:"pre"`
			Post    int64                  `json:"post"`
			Focus   string                 `json:"focus"`
		}{"compact", trigger, pre, post, focus})}
	l.emitEntry(c.Entry())
	l.gauge()
}

// Compact runs the fake compaction command: a context.compacted entry with
// trigger manual goes to the sink before it returns. The focus is honoured
// only with Options.CompactFocus; otherwise FocusApplied is false and
// FocusNote says why. A running turn makes it fail with core.CodeBusy.
func (l *Live) Compact(ctx context.Context, focus string) (core.CompactResult, error) {
	if err := l.h.refuse(core.CapCompactCommand); err != nil {
		return core.CompactResult{}, err
	}
	l.mu.Lock()
	if err := l.deadErr(); err != nil {
		l.mu.Unlock()
		return core.CompactResult{}, err
	}
	if l.turn != nil {
		l.mu.Unlock()
		return core.CompactResult{}, core.Errorf(core.CodeBusy, "fake: session %s is running a turn", l.id)
	}
	l.turn = func(error) {} // hold off prompts while compacting
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.turn = nil
		l.mu.Unlock()
	}()
	if r, err := l.h.get(l.id); err == nil {
		l.mu.Lock()
		l.used = r.Used
		l.mu.Unlock()
	}
	res := core.CompactResult{}
	if focus != "" {
		res.FocusApplied = l.h.has(core.CapCompactionFocus)
		if !res.FocusApplied {
			res.FocusNote = "the fake compaction command takes no focus"
		}
	}
	var applied *bool
	if focus != "" {
		applied = &res.FocusApplied
	}
	l.compacted(core.TriggerManual, 0, 0, focus, applied)
	if err := l.flush(); err != nil {
		return core.CompactResult{}, err
	}
	return res, nil
}

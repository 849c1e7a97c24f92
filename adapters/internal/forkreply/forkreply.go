// Package forkreply is what the adapters' forks (core.Fork) share: the
// approver that refuses a fork's tool requests, and the collector of the
// assistant text a fork's turn produced.
package forkreply

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/bridge-dev/bridge/core"
)

// Refuse is a fork's approver: a checkpoint fork runs no tool it would have
// to ask for.
func Refuse(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
	return core.PolicyDecision(core.Preset{}, r, core.DecidedByPolicy, "a checkpoint fork runs no tools")
}

// Text collects the assistant text of a fork's turn from its events;
// nothing else of the fork is kept. It is safe for concurrent use.
type Text struct {
	mu sync.Mutex
	b  strings.Builder
}

// Sink is the fork's core.EventSink.
func (t *Text) Sink(ev core.Event) {
	if ev.Entry == nil || ev.Entry.Kind != core.KindAssistantMessage {
		return
	}
	var p struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(ev.Entry.Payload, &p) != nil || p.Text == "" {
		return
	}
	t.mu.Lock()
	t.b.WriteString(p.Text)
	t.b.WriteString("\n")
	t.mu.Unlock()
}

// Reset forgets the text collected so far (before the next turn).
func (t *Text) Reset() {
	t.mu.Lock()
	t.b.Reset()
	t.mu.Unlock()
}

// String returns the text collected since the last Reset.
func (t *Text) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

package fake

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/bridge-dev/bridge/core"
)

// Fork (session.fork) returns a side copy of the session. Its Ask runs a
// prompt as a turn of its own: the directives queued for the session's
// next prompt first (as Prompt would take them, so "next json {...}"
// answers a checkpoint asked of a fork too), else the prompt's script or
// the echo. Nothing the fork does reaches the session's sink or its stored
// history, and its tool requests are refused.
func (l *Live) Fork(ctx context.Context) (core.Fork, error) {
	if err := l.h.refuse(core.CapSessionFork); err != nil {
		return nil, err
	}
	if err := l.alive(); err != nil {
		return nil, err
	}
	// The fork's first turn is the session's next prompt, taken now: the
	// fork copies the session as it stands, and the live session may take
	// turns of its own meanwhile.
	f := &fork{parent: l}
	due, prompts, used, err := l.takeDue()
	if err != nil {
		return nil, err
	}
	f.first = &forkTurn{due: due, prompts: prompts, used: used}
	return f, nil
}

// forkTurn is what a fork's turn takes from the session: the directives due,
// the prompt's number and the usage so far.
type forkTurn struct {
	due     []string
	prompts int64
	used    int64
}

// fork is the fake's core.Fork.
type fork struct {
	parent *Live

	mu     sync.Mutex
	closed bool
	asks   int
	first  *forkTurn // taken at Fork, for the first Ask
}

// Ask runs one turn in the fork.
func (f *fork) Ask(ctx context.Context, prompt string) (core.ForkReply, error) {
	f.mu.Lock()
	closed := f.closed
	f.asks++
	turn := f.first
	f.first = nil
	f.mu.Unlock()
	if closed {
		return core.ForkReply{}, core.Errorf(core.CodeHarness, "fake: the fork is closed")
	}
	p := f.parent
	if err := p.alive(); err != nil {
		return core.ForkReply{}, err
	}
	p.h.mu.Lock()
	p.h.forks = append(p.h.forks, prompt)
	p.h.mu.Unlock()
	var (
		mu   sync.Mutex
		text strings.Builder
	)
	side := &Live{h: p.h, id: p.id, gen: "fork" + randHex(3), discard: true, done: make(chan struct{}),
		req: core.CreateRequest{Preset: core.Preset{}, Approve: func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
			return core.PolicyDecision(core.Preset{}, r, core.DecidedByPolicy, "a checkpoint fork runs no tools")
		}},
		sink: func(ev core.Event) {
			if ev.Entry == nil || ev.Entry.Kind != core.KindAssistantMessage {
				return
			}
			var t struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(ev.Entry.Payload, &t)
			mu.Lock()
			text.WriteString(t.Text)
			text.WriteString("\n")
			mu.Unlock()
		}}
	if turn == nil {
		due, prompts, used, err := p.takeDue()
		if err != nil {
			return core.ForkReply{}, err
		}
		turn = &forkTurn{due: due, prompts: prompts, used: used}
	}
	steps, err := side.steps(prompt, nil, turn.due)
	if err != nil {
		return core.ForkReply{}, err
	}
	res, err := side.run(ctx, steps, turn.prompts)
	if err != nil {
		return core.ForkReply{}, err
	}
	if res.StopReason != "end_turn" {
		return core.ForkReply{}, core.Errorf(core.CodeHarness, "fake: the fork's turn ended with %s", res.StopReason)
	}
	mu.Lock()
	defer mu.Unlock()
	out := text.String()
	return core.ForkReply{Text: out, Usage: &core.TokenUsage{InputTokens: turn.used + tokens(prompt), OutputTokens: tokens(out)}}, nil
}

// Close discards the fork.
func (f *fork) Close(ctx context.Context) error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

// ForkAsks returns the prompts asked of this host's forks, oldest first.
func (h *Host) ForkAsks() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.forks...)
}

// takeDue counts a prompt asked of a fork and takes the directives due
// for it, without storing the prompt in the session's history.
func (l *Live) takeDue() (due []string, prompts, used int64, err error) {
	err = l.h.update(l.id, func(r *record) error {
		due = r.nextPrompt()
		prompts = r.Prompts
		used = r.Used
		return nil
	})
	return due, prompts, used, err
}

// nextPrompt counts one more prompt and takes the directives queued for it
// (dropping any whose prompt has passed).
func (r *record) nextPrompt() []string {
	r.Prompts++
	var due []string
	var keep []queued
	for _, q := range r.Queue {
		switch {
		case q.Due == r.Prompts:
			due = append(due, q.Line)
		case q.Due > r.Prompts:
			keep = append(keep, q)
		}
	}
	r.Queue = keep
	return due
}

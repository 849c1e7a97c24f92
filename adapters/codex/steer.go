package codex

import (
	"context"

	"github.com/bridge-dev/bridge/core"
)

// Steer adds input to the running turn with turn/steer, naming the turn it
// expects (Codex refuses when another turn runs, or one that cannot be
// steered, such as a manual compaction). The input's userMessage item is
// not echoed as user.message: the service records the prompt itself.
func (l *live) Steer(ctx context.Context, content []core.Content) error {
	in, err := userInputs(content)
	if err != nil {
		return err
	}
	turn := l.m.active()
	if turn == "" {
		l.mu.Lock()
		turn = l.promptTurn
		l.mu.Unlock()
	}
	if turn == "" {
		return core.Errorf(core.CodeInvalid, "codex: no turn is running to steer")
	}
	echo := promptText(content)
	l.m.expectPrompt(echo)
	params := turnSteerParams{ThreadID: l.thread(), Input: in, ExpectedTurnID: turn}
	if err := l.p.conn.call(ctx, "turn/steer", params, nil); err != nil {
		l.m.dropPrompt(echo)
		return l.callErr("turn/steer", err)
	}
	return nil
}

var _ core.Steerer = (*live)(nil)

package fake

import (
	"context"

	"github.com/bridge-dev/bridge/core"
)

// Steer takes a prompt into the running turn: the turn answers it at once
// with an assistant.message "fake steered: " + its text. With no turn
// running it is a core.CodeInvalid error; with prompt.steer switched off it
// wraps core.ErrUnsupported.
func (l *Live) Steer(ctx context.Context, content []core.Content) error {
	if err := l.h.refuse(core.CapPromptSteer); err != nil {
		return err
	}
	text, _, err := splitContent(content)
	if err != nil {
		return err
	}
	l.mu.Lock()
	running := l.turn != nil
	l.mu.Unlock()
	if !running {
		return core.Errorf(core.CodeInvalid, "fake: no turn is running to steer")
	}
	l.say("fake steered: " + text)
	return nil
}

var _ core.Steerer = (*Live)(nil)

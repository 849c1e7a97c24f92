package live

import "context"

// TurnGate is a live session's one turn at a time (a prompt, a checkpoint,
// a compaction, a suspension): a channel holding one token while a turn
// holds the session. Taking it can wait for the release itself (Lock,
// LockContext) rather than poll, and Held reads whether a turn holds it
// without taking it (a TryLock and Unlock as a probe could make a prompt
// arriving at that moment find the session busy).
type TurnGate struct{ held chan struct{} }

func NewTurnGate() TurnGate { return TurnGate{held: make(chan struct{}, 1)} }

// TryLock takes the turn if it is free.
func (g TurnGate) TryLock() bool {
	select {
	case g.held <- struct{}{}:
		return true
	default:
		return false
	}
}

// LockContext takes the turn, waiting until it is free or ctx ends.
func (g TurnGate) LockContext(ctx context.Context) error {
	select {
	case g.held <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unlock gives the turn back.
func (g TurnGate) Unlock() {
	select {
	case <-g.held:
	default:
		panic("service: unlock of a turn nobody holds")
	}
}

// Held reports whether a turn holds the session now.
func (g TurnGate) Held() bool { return len(g.held) > 0 }

// C is the gate as a channel: a send on it takes the turn, so a waiter can
// select on the turn's release with other signals.
func (g TurnGate) C() chan<- struct{} { return g.held }

package service

import "context"

// turnGate is a live session's one turn at a time (a prompt, a checkpoint,
// a compaction, a suspension): a channel holding one token while a turn
// holds the session. Taking it can wait for the release itself (Lock,
// LockContext) rather than poll, and Held reads whether a turn holds it
// without taking it (a TryLock and Unlock as a probe could make a prompt
// arriving at that moment find the session busy).
type turnGate struct{ held chan struct{} }

func newTurnGate() turnGate { return turnGate{held: make(chan struct{}, 1)} }

// TryLock takes the turn if it is free.
func (g turnGate) TryLock() bool {
	select {
	case g.held <- struct{}{}:
		return true
	default:
		return false
	}
}

// LockContext takes the turn, waiting until it is free or ctx ends.
func (g turnGate) LockContext(ctx context.Context) error {
	select {
	case g.held <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unlock gives the turn back.
func (g turnGate) Unlock() {
	select {
	case <-g.held:
	default:
		panic("service: unlock of a turn nobody holds")
	}
}

// Held reports whether a turn holds the session now.
func (g turnGate) Held() bool { return len(g.held) > 0 }

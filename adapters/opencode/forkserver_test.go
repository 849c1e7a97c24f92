package opencode

import (
	"context"
	"time"
)

// awaitForkServer waits until the fork server answers (tests and the
// benchmark, which measure forks on it), starting it if need be; it
// returns the last start's error when a start fails.
func (h *Host) awaitForkServer(ctx context.Context) (*server, error) {
	h.warmForkServer()
	for {
		h.mu.Lock()
		s, warming, err := h.fork.srv, h.fork.warming, h.fork.lastErr
		h.mu.Unlock()
		switch {
		case s != nil && !s.dead():
			return s, nil
		case !warming && err != nil:
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

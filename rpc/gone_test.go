package rpc

import (
	"context"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/schema"
)

// TestGoneClientCancelsItsRequests: a client that goes away (its input
// ends without shutdown) while a request of its runs (a slow search, a
// turn) has that request's context cancelled, so the work stops instead
// of running on for nobody.
func TestGoneClientCancelsItsRequests(t *testing.T) {
	fake := newFake()
	started := make(chan struct{})
	backendErr := make(chan error, 1)
	fake.prompt = func(ctx context.Context, _ schema.SessionPromptParams) (schema.SessionPromptResult, error) {
		err := blockUntilCancelled(ctx, started)
		backendErr <- ctx.Err()
		return schema.SessionPromptResult{}, err
	}
	c := startServer(t, fake, nil)
	c.initialize()
	c.send(1, "session/prompt", map[string]any{"sessionId": "s1", "content": []any{map[string]any{"type": "text", "text": "slow"}}})
	<-started
	c.w.Close()
	select {
	case err := <-backendErr:
		if err == nil {
			t.Fatal("the request's context was not cancelled")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the request still runs a minute after its client went away")
	}
}

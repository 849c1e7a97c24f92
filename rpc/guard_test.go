package rpc

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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
	c.Send(1, "session/prompt", map[string]any{"sessionId": "s1", "content": []any{map[string]any{"type": "text", "text": "slow"}}})
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

// TestRepliesAreValidUTF8: a reply holding raw JSON with bytes that are
// not UTF-8 (a payload from a record written before the record's door
// cleaned them, say) reaches the client as valid UTF-8, each bad byte
// U+FFFD: a client (a WebSocket above all) never receives invalid UTF-8.
func TestRepliesAreValidUTF8(t *testing.T) {
	fake := newFake()
	fake.history = func(context.Context, schema.SessionHistoryParams) (schema.SessionHistoryResult, error) {
		return schema.SessionHistoryResult{Entries: []schema.Entry{{ID: "e1", SessionID: "s1", Seq: 1, Kind: "user.message",
			Payload: json.RawMessage("{\"text\":\"a\xffb\"}")}}}, nil
	}
	c := startServer(t, fake, nil)
	c.initialize()
	c.Send(5, "session/history", map[string]any{"sessionId": "s1"})
	m := c.reply(5)
	if m.Error != nil || !utf8.Valid(m.Result) || !strings.Contains(string(m.Result), "a\ufffdb") {
		t.Fatalf("reply %q (error %+v); want valid UTF-8 with U+FFFD", m.Result, m.Error)
	}
}

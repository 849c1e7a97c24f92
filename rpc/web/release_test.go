package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/coder/websocket"

	"github.com/bridge-dev/bridge/rpc"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// heldBackend is a connection's backend whose session/list runs until its
// request is cancelled: a request still in flight when its client falls
// behind. Nothing else is called.
type heldBackend struct {
	schema.Backend
	listing   chan struct{} // closed when session/list starts
	cancelled chan struct{} // closed when its request is cancelled
	closed    chan struct{} // closed by Close
}

func (b *heldBackend) SessionList(ctx context.Context, _ schema.SessionListParams) (schema.SessionListResult, error) {
	close(b.listing)
	<-ctx.Done()
	close(b.cancelled)
	return schema.SessionListResult{}, ctx.Err()
}

func (b *heldBackend) Close(context.Context) error { close(b.closed); return nil }

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFallenBehindConnectionIsReleased: a tab that stops reading while a
// request of its own is still running, and falls behind (its queue
// overflows): its connection's rpc server ends at once, not when the client
// finally goes away (bridge web kept it up to 10 minutes: the request kept
// running, and the fan-out kept encoding every notification for it), so
// the request is cancelled and the backend closed (no more notifications,
// no more approvals asked of it). The log says once, at warning level,
// that this connection (its number and address) fell behind, and nothing
// about requests "still unanswered" (the rpc server used to wait 5 s for
// replies nobody could write, then warn about them). The tab, reading
// again, is still told why: the note, then the close status 1008.
func TestFallenBehindConnectionIsReleased(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b := &heldBackend{listing: make(chan struct{}), cancelled: make(chan struct{}), closed: make(chan struct{})}
	notifiers := make(chan peer.Notifier, 1)
	s, err := New(Options{Token: "tok", Assets: fstest.MapFS{"index.html": {Data: []byte("<p>hi</p>")}}, Logger: logger,
		QueueMessages: 8, RPC: rpc.Config{Logger: logger,
			Open: func(_ context.Context, _ rpc.InitOptions, n peer.Notifier, _ rpc.Caller) (rpc.Backend, error) {
				notifiers <- n
				return b, nil
			}}})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Handler().ServeHTTP(w, r)
		if r.URL.Path == "/rpc" {
			served <- struct{}{}
		}
	}))
	t.Cleanup(srv.Close)

	// A tab with a small receive buffer, so that not reading fills the
	// socket after a few megabytes.
	c := dialWS(t, srv.URL+"/rpc?token=tok", true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	send := func(msg string) {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`)
	if _, msg, err := c.Read(ctx); err != nil || !strings.Contains(string(msg), `"serverInfo"`) {
		t.Fatalf("initialize: %s %v", msg, err)
	}
	send(`{"jsonrpc":"2.0","method":"initialized","params":{}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}`)
	n := <-notifiers
	select {
	case <-b.listing:
	case <-ctx.Done():
		t.Fatal("session/list never started")
	}

	// The tab reads nothing more; the service has 25 MB of notifications
	// for it, far more than its socket and queue (8 messages) hold.
	big := strings.Repeat("x", 64<<10)
	for range 400 {
		n.Log(3, big)
	}
	for what, ch := range map[string]chan struct{}{
		"the request in flight was cancelled": b.cancelled, "the backend was closed": b.closed,
	} {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("a connection that fell behind was kept: not %s; log:\n%s", what, logs.String())
		}
	}
	select {
	case <-served:
	case <-ctx.Done():
		t.Fatalf("the connection's rpc server still runs after it fell behind; log:\n%s", logs.String())
	}

	log := logs.String()
	warnings := regexp.MustCompile(`(?m)^.*level=WARN.*$`).FindAllString(log, -1)
	if len(warnings) != 1 || !strings.Contains(warnings[0], "a client stopped reading; closing its connection") ||
		!strings.Contains(warnings[0], " conn=1 ") || !strings.Contains(warnings[0], " remote=127.0.0.1:") {
		t.Fatalf("want one warning naming the connection that fell behind, got:\n%s", log)
	}
	if strings.Contains(log, "still unanswered") || strings.Contains(log, "still running") {
		t.Fatalf("the log speaks of requests still unanswered:\n%s", log)
	}
	if !regexp.MustCompile(`level=INFO msg="rpc: requests left unanswered: writing to the client failed" conn=1 remote=\S+ requests=1 `).MatchString(log) {
		t.Fatalf("the log does not say, once, that the connection's one request in flight went unanswered:\n%s", log)
	}

	// Reading again, the tab gets what was on its way, then the note and
	// the close status saying why.
	noted := false
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !noted || !errors.As(err, &ce) || ce.Code != CloseFellBehind || ce.Reason != FellBehindReason {
				t.Fatalf("the tab, reading again: %v after the note: %v; want close status %d with %q", err, noted, CloseFellBehind, FellBehindReason)
			}
			break
		}
		if noted {
			t.Fatalf("a message after the note: %.60s", msg)
		}
		var m struct {
			Method string                  `json:"method"`
			Params schema.LogMessageParams `json:"params"`
		}
		if json.Unmarshal(msg, &m) != nil || m.Method != "window/logMessage" {
			t.Fatalf("an unexpected message: %.80s", msg)
		}
		noted = m.Params.Message == FellBehindReason
	}
}

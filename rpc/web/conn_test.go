package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// pair serves WebSockets on 127.0.0.1 and hands each accepted connection,
// wrapped as a wsConn with limits, to the test.
type pair struct {
	srv   *httptest.Server
	conns chan *wsConn
}

func newPair(t *testing.T, limits queueLimits) *pair {
	t.Helper()
	p := &pair{conns: make(chan *wsConn, 4)}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.SetReadLimit(-1)
		wc := newWSConn(c, limits, slog.New(slog.NewTextHandler(io.Discard, nil)))
		p.conns <- wc
		// The rpc server always reads (control frames, the close
		// handshake); so does this one, until the connection ends.
		for {
			if _, _, _, err := wc.ReadMessage(context.Background(), 1<<20); err != nil {
				break
			}
		}
		_ = wc.Close()
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// dial connects a client; a small receive buffer makes a client that does
// not read stall the server's writes after a few megabytes (the kernel's
// send buffer) instead of tens (an autotuned receive buffer).
func (p *pair) dial(t *testing.T, smallBuffer bool) (*websocket.Conn, *wsConn) {
	t.Helper()
	return dialWS(t, p.srv.URL, smallBuffer), <-p.conns
}

// dialWS opens a WebSocket to the http:// URL url, with a small receive
// buffer when smallBuffer is set.
func dialWS(t *testing.T, url string, smallBuffer bool) *websocket.Conn {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil && smallBuffer {
			err = c.(*net.TCPConn).SetReadBuffer(128 << 10)
		}
		return c, err
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http"), &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(-1)
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// message is the i-th test message: its number, then padding.
func message(i, size int) []byte {
	head := fmt.Sprintf("%08d", i)
	return []byte(head + strings.Repeat("x", size-len(head)))
}

// readAll reads n messages from c and checks they are 0..n-1 in order.
func readAll(c *websocket.Conn, n int) error { return readAllProgress(c, n, nil) }

// readAllProgress is readAll that sends the count read so far to progress.
func readAllProgress(c *websocket.Conn, n int, progress chan<- int) error {
	for i := range n {
		if progress != nil {
			progress <- i
		}
		_, b, err := c.Read(context.Background())
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if want := fmt.Sprintf("%08d", i); string(b[:8]) != want {
			return fmt.Errorf("message %d: got %q first", i, b[:8])
		}
	}
	return nil
}

// TestStalledClientDelaysNoOther: messages go to two clients in turn, as
// the fan-out sends a notification to every tab; one client never reads.
// Every write returns at once (with the old direct writes, the stalled
// client's write blocked for 30 s and then failed), the reading client gets
// everything, and the stalled one, once it reads, gets everything too, in
// order: its queue held what its socket could not.
func TestStalledClientDelaysNoOther(t *testing.T) {
	p := newPair(t, queueLimits{})
	reader, ra := p.dial(t, false)
	stalled, sa := p.dial(t, true)
	const n, size = 200, 64 << 10 // 12.5 MiB: more than the socket buffers, less than the queue bound
	got := make(chan error, 1)
	go func() { got <- readAll(reader, n) }()
	for i := range n {
		if err := sa.WriteMessage(context.Background(), message(i, size)); err != nil {
			t.Fatalf("write %d to the stalled client: %v", i, err)
		}
		if err := ra.WriteMessage(context.Background(), message(i, size)); err != nil {
			t.Fatalf("write %d to the reading client: %v", i, err)
		}
	}
	if err := <-got; err != nil {
		t.Fatalf("the reading client: %v", err)
	}
	sa.mu.Lock()
	queued := len(sa.queue)
	sa.mu.Unlock()
	if queued == 0 {
		t.Fatalf("the stalled client's queue is empty: the test did not stall it")
	}
	if err := readAll(stalled, n); err != nil {
		t.Fatalf("the stalled client, reading at last: %v", err)
	}
}

// TestOverflowClosesWithReason: a client that stops reading has its queue
// overflow at the bound; the write that overflows it and every later one
// fail with ErrFellBehind (never blocking), the other client is unaffected,
// and the stalled client, when it reads again, gets a prefix of its
// messages in order, then a window/logMessage error saying why, then the
// close status CloseFellBehind with FellBehindReason.
func TestOverflowClosesWithReason(t *testing.T) {
	p := newPair(t, queueLimits{messages: 32, bytes: 1 << 20})
	reader, ra := p.dial(t, false)
	stalled, sa := p.dial(t, true)
	const size = 64 << 10
	const most = 2000 // 125 MiB: far past any socket buffer and the bound
	// The reading client keeps up: the writer waits for it to be within a
	// few messages (a harness makes entries far slower than a loop does).
	got := make(chan error, 1)
	progress := make(chan int, most)
	go func() { got <- readAllProgress(reader, most, progress) }()
	overflowed := -1
	read := 0
	for i := range most {
		for read < i-8 {
			select {
			case read = <-progress:
			case err := <-got:
				t.Fatalf("the reading client: %v", err)
			}
		}
		err := sa.WriteMessage(context.Background(), message(i, size))
		if err != nil && overflowed < 0 {
			if !errors.Is(err, ErrFellBehind) {
				t.Fatalf("write %d: %v, want ErrFellBehind", i, err)
			}
			overflowed = i
		} else if overflowed >= 0 && !errors.Is(err, ErrFellBehind) {
			t.Fatalf("write %d after the overflow: %v, want ErrFellBehind", i, err)
		}
		if err := ra.WriteMessage(context.Background(), message(i, size)); err != nil {
			t.Fatalf("write %d to the reading client: %v", i, err)
		}
	}
	if overflowed < 0 {
		t.Fatalf("%d messages of %d bytes never overflowed a queue of 32 messages / 1 MiB", most, size)
	}
	if err := <-got; err != nil {
		t.Fatalf("the reading client: %v", err)
	}
	// The rpc server ends as soon as a write fails, and closes the
	// connection, long before the stalled client reads again: the writer
	// must still tell it why.
	if err := sa.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	noted := false
	for i := 0; ; i++ {
		_, b, err := stalled.Read(context.Background())
		if err == nil && noted {
			t.Fatalf("a message after the log message: %.40q", b)
		}
		if err != nil {
			if !noted {
				t.Fatalf("the connection ended (%v) without the window/logMessage saying why", err)
			}
			if s := websocket.CloseStatus(err); s != CloseFellBehind {
				t.Fatalf("after %d messages: %v (status %d), want close status %d", i, err, s, CloseFellBehind)
			}
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Reason != FellBehindReason {
				t.Fatalf("close reason %q, want %q", ce.Reason, FellBehindReason)
			}
			if i-1 >= overflowed {
				t.Fatalf("received %d messages, but the queue overflowed at %d", i-1, overflowed)
			}
			return
		}
		if strings.HasPrefix(string(b), `{"jsonrpc":"2.0","method":"window/logMessage"`) {
			var m struct {
				Params struct {
					Type    int    `json:"type"`
					Message string `json:"message"`
				} `json:"params"`
			}
			if err := json.Unmarshal(b, &m); err != nil || m.Params.Type != 1 || m.Params.Message != FellBehindReason {
				t.Fatalf("log message %s (%v)", b, err)
			}
			noted = true
			continue
		}
		if want := fmt.Sprintf("%08d", i); string(b[:8]) != want {
			t.Fatalf("message %d: got %q first", i, b[:8])
		}
	}
}

// expectNoteAndClose reads c (a client that stopped reading and reads
// again) to its end: messages numbered from 0, then the window/logMessage
// error saying why, then the close status CloseFellBehind with
// FellBehindReason. It returns how many numbered messages came first.
func expectNoteAndClose(t *testing.T, c *websocket.Conn) int {
	t.Helper()
	noted := false
	for i := 0; ; i++ {
		_, b, err := c.Read(context.Background())
		if err == nil && noted {
			t.Fatalf("a message after the log message: %.40q", b)
		}
		if err != nil {
			if !noted {
				t.Fatalf("the connection ended (%v) without the window/logMessage saying why", err)
			}
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != CloseFellBehind || ce.Reason != FellBehindReason {
				t.Fatalf("after %d messages: %v, want close status %d with %q", i, err, CloseFellBehind, FellBehindReason)
			}
			return i - 1
		}
		if strings.HasPrefix(string(b), `{"jsonrpc":"2.0","method":"window/logMessage"`) {
			if !strings.Contains(string(b), FellBehindReason) {
				t.Fatalf("log message %s", b)
			}
			noted = true
			continue
		}
		if want := fmt.Sprintf("%08d", i); string(b[:8]) != want {
			t.Fatalf("message %d: got %q first", i, b[:8])
		}
	}
}

// TestUnreadMessageCountsAsFallingBehind: a client that leaves a message
// unread for stallAfter (its socket full, far from its queue bound) has
// fallen behind as if its queue had overflowed: later messages are refused
// with ErrFellBehind at once, and when it reads again it gets what was
// already on its way, the note saying why, and the close status 1008. (A
// stalled client used to lose the connection without a word after 30 s,
// which under load came before any overflow.)
func TestUnreadMessageCountsAsFallingBehind(t *testing.T) {
	p := newPair(t, queueLimits{stallAfter: 300 * time.Millisecond})
	stalled, sa := p.dial(t, true)
	// 64 KiB messages fill the socket buffers (the client's is small) and
	// block the writer; then small ones, far below the queue's bounds (at
	// most 400 × 64 KiB + 16 × 1 KiB a second), until the connection refuses
	// them.
	deadline := time.Now().Add(2 * time.Minute)
	sent := 0
	for ; ; sent++ {
		size := 64 << 10
		if sent >= 400 {
			size = 1 << 10
			time.Sleep(60 * time.Millisecond)
		}
		err := sa.WriteMessage(context.Background(), message(sent, size))
		if errors.Is(err, ErrFellBehind) {
			break
		}
		if err != nil {
			t.Fatalf("write %d: %v, want ErrFellBehind once the client stalled", sent, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client that reads nothing was never found behind (%d messages queued)", sent)
		}
	}
	// The rpc server closes the connection when a write fails; the writer
	// still tells the client why once it reads.
	if err := sa.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := expectNoteAndClose(t, stalled); got >= sent {
		t.Fatalf("received %d messages of %d: the queue was not dropped", got, sent)
	}
}

// TestAbandonedClientIsClosed: a client that never reads again loses the
// connection after abandonAfter, without the note.
func TestAbandonedClientIsClosed(t *testing.T) {
	p := newPair(t, queueLimits{stallAfter: 100 * time.Millisecond, abandonAfter: 500 * time.Millisecond})
	_, sa := p.dial(t, true)
	for i := range 400 {
		if err := sa.WriteMessage(context.Background(), message(i, 64<<10)); err != nil {
			break
		}
	}
	select {
	case <-sa.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the writer still waits for a client that never reads")
	}
}

// TestCloseSendsWhatIsQueued: Close writes the queued messages (the last
// replies, the shutdown reply among them) before closing normally.
func TestCloseSendsWhatIsQueued(t *testing.T) {
	p := newPair(t, queueLimits{})
	c, sc := p.dial(t, false)
	for i := range 50 {
		if err := sc.WriteMessage(context.Background(), message(i, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- sc.Close() }()
	if err := readAll(c, 50); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(context.Background()); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after the queue: %v, want a normal closure", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := sc.WriteMessage(context.Background(), []byte("late")); err == nil {
		t.Fatalf("a write after Close was accepted")
	}
}

// TestLargeMessageFitsAQueueInUse: a message larger than the whole byte
// bound is accepted behind other queued messages, as long as the queue had
// not reached its bound: a client that keeps up is never dropped for one
// long entry.
func TestLargeMessageFitsAQueueInUse(t *testing.T) {
	p := newPair(t, queueLimits{messages: 100, bytes: 1 << 20})
	c, sc := p.dial(t, false)
	sc.mu.Lock() // hold the writer back, so the messages stay queued
	sc.queue = append(sc.queue, message(0, 1000))
	sc.bytes += 1000
	sc.mu.Unlock()
	if err := sc.WriteMessage(context.Background(), message(1, 3<<20)); err != nil {
		t.Fatalf("a 3 MiB message behind a small one: %v", err)
	}
	if err := readAll(c, 2); err != nil {
		t.Fatal(err)
	}
}

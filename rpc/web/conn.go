package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// A client that leaves a message unread for stallAfter (its socket full,
// one write blocked) has stopped reading: it is treated as one whose queue
// overflowed. One that leaves it unread for abandonAfter is disconnected
// without being told why (it may never read again). noteTimeout bounds the
// write of the note saying why, to a client that reads again.
const (
	stallAfter   = 30 * time.Second
	abandonAfter = 10 * time.Minute
	noteTimeout  = 30 * time.Second
)

// closeDrain bounds how long Close waits for the queued messages (the last
// replies) to be written before it closes the connection anyway.
const closeDrain = 5 * time.Second

// Default bounds of one connection's send queue: the messages (replies and
// notifications) accepted for the client but not yet written to its socket.
const (
	DefaultQueueMessages = 16384
	DefaultQueueBytes    = 32 << 20
)

// CloseFellBehind is the WebSocket close status of a connection whose send
// queue overflowed (1008, policy violation), and FellBehindReason its close
// reason. The WebUI reconnects and reloads its state when it sees it.
const (
	CloseFellBehind  = websocket.StatusPolicyViolation
	FellBehindReason = "bridge: this client stopped reading and fell too far behind; reconnect and reload"
)

// fellBehindNote is the last message a connection that fell behind is
// sent, ahead of the close frame: a window/logMessage error with the same
// reason. A client gets it in order after what its socket already held,
// whereas the close frame's reason is lost when the client is too slow to
// complete the close handshake (the library bounds it at 5 s).
var fellBehindNote = []byte(`{"jsonrpc":"2.0","method":"window/logMessage","params":{"type":1,"message":"` + FellBehindReason + `"}}`)

// ErrFellBehind is returned for every message sent to a connection whose
// client fell behind (its send queue overflowed, or it left a message
// unread for stallAfter): the connection is being closed.
var ErrFellBehind = errors.New("web: the client stopped reading and fell behind; the connection is closed")

// queueLimits bound a connection's send queue, and how long its client may
// leave a message unread (stallAfter, abandonAfter when zero).
type queueLimits struct {
	messages     int
	bytes        int64
	stallAfter   time.Duration
	abandonAfter time.Duration
}

// wsConn is an rpc.MessageConn over a WebSocket. Writes never wait for the
// client: WriteMessage puts the message on the connection's own bounded
// queue, which one goroutine writes to the socket in order. So a client
// that stops reading (a stalled tab) delays nobody else: not the shared
// service that fans notifications out to every tab, nor the other tabs.
// When its queue overflows, or it leaves a message unread for stallAfter,
// it has fallen behind: the queued messages are dropped, every later
// message is refused with ErrFellBehind, and once the client reads again
// it is sent a window/logMessage error saying why, then the connection is
// closed with CloseFellBehind and FellBehindReason. A client that stays
// stalled for abandonAfter loses the connection without either.
//
// Once the connection has failed (fallen behind, or a write failed),
// ReadMessage returns the failure: the rpc server on it ends at once and
// releases what the connection held (its requests in flight are cancelled,
// its backend closed, so it gets no more notifications), while the writer
// alone goes on telling the client why.
type wsConn struct {
	c      *websocket.Conn
	log    *slog.Logger
	limits queueLimits

	mu      sync.Mutex
	cond    *sync.Cond // signalled when queue, err or closing change
	queue   [][]byte
	bytes   int64
	err     error // set once: a write failed, or the queue overflowed
	behind  bool  // the queue overflowed
	closing bool  // Close was called: write what is queued, then stop
	done    chan struct{}
	failed  chan struct{} // closed when err is set

	// The reader goroutine (started by the first ReadMessage) reads the
	// socket for as long as it is open and hands each message over reads;
	// readErr is the error that ended it, readEnded closed after it is set.
	readOnce  sync.Once
	reads     chan readResult
	readEnded chan struct{}
	readErr   error
}

// readResult is one message read, as ReadMessage returns it.
type readResult struct {
	data   []byte
	size   int64
	binary bool
}

// newWSConn starts the writer of c. Zero limits take the defaults.
func newWSConn(c *websocket.Conn, limits queueLimits, log *slog.Logger) *wsConn {
	if limits.messages <= 0 {
		limits.messages = DefaultQueueMessages
	}
	if limits.bytes <= 0 {
		limits.bytes = DefaultQueueBytes
	}
	if limits.stallAfter <= 0 {
		limits.stallAfter = stallAfter
	}
	if limits.abandonAfter <= 0 {
		limits.abandonAfter = abandonAfter
	}
	w := &wsConn{c: c, log: log, limits: limits, done: make(chan struct{}), failed: make(chan struct{}),
		reads: make(chan readResult), readEnded: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.writer()
	return w
}

// ReadMessage returns the next message, keeping at most max bytes of it;
// once the connection has failed, the failure (ErrFellBehind, or the
// write's error): nothing read after that could be answered.
func (w *wsConn) ReadMessage(ctx context.Context, max int64) ([]byte, int64, bool, error) {
	w.readOnce.Do(func() { go w.reader(ctx, max) })
	select {
	case <-w.failed:
	default:
		select {
		case r := <-w.reads:
			return r.data, r.size, r.binary, nil
		case <-w.readEnded:
			return nil, 0, false, w.readErr
		case <-w.failed:
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return nil, 0, false, w.err
}

// reader reads the socket until it closes or fails. Its reads end with
// ctx (the rpc server's lifetime), which closes the socket, unless the
// connection has failed first: then they go on, discarding what the client
// sends, so that the writer can still tell the client why and close the
// connection properly.
func (w *wsConn) reader(ctx context.Context, max int64) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		select {
		case <-w.failed:
		default:
			cancel()
		}
	})
	defer stop()
	for {
		r, err := w.readMessage(rctx, max)
		if err != nil {
			w.readErr = err
			close(w.readEnded)
			return
		}
		select {
		case w.reads <- r:
		case <-w.failed:
		}
	}
}

// readMessage reads one message, keeping at most max bytes of it.
func (w *wsConn) readMessage(ctx context.Context, max int64) (readResult, error) {
	typ, r, err := w.c.Reader(ctx)
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
			return readResult{}, io.EOF
		}
		if errors.Is(err, io.EOF) {
			return readResult{}, io.EOF
		}
		return readResult{}, fmt.Errorf("web: reading a WebSocket message: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return readResult{}, fmt.Errorf("web: reading a WebSocket message: %w", err)
	}
	if int64(len(data)) > max {
		rest, err := io.Copy(io.Discard, r)
		if err != nil {
			return readResult{}, fmt.Errorf("web: discarding an oversized WebSocket message: %w", err)
		}
		return readResult{size: int64(len(data)) + rest, binary: typ == websocket.MessageBinary}, nil
	}
	return readResult{data: data, size: int64(len(data)), binary: typ == websocket.MessageBinary}, nil
}

// WriteMessage queues data (kept, not copied) to be sent as one text
// message; it never waits for the client. A message that finds the queue
// full (its message bound reached, or its byte bound reached or passed)
// overflows it (see wsConn); so one large message (a long entry, a history
// page) is never refused by a client that keeps up.
func (w *wsConn) WriteMessage(_ context.Context, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.err != nil:
		return w.err
	case w.closing:
		return net.ErrClosed
	}
	if len(w.queue) >= w.limits.messages || w.bytes >= w.limits.bytes {
		w.fellBehind("its send queue is full")
		return w.err
	}
	w.queue = append(w.queue, data)
	w.bytes += int64(len(data))
	w.cond.Broadcast()
	return nil
}

// fellBehind drops the queue of a client that stopped reading and refuses
// every later message; the writer, once the client reads again, tells it
// why and closes the connection. w.mu is held.
func (w *wsConn) fellBehind(why string) {
	w.log.Warn("web: a client stopped reading; closing its connection (its requests in flight go unanswered; it is told why if it reads again)",
		"why", why, "queuedMessages", len(w.queue), "queuedBytes", w.bytes, "limitMessages", w.limits.messages, "limitBytes", w.limits.bytes)
	w.fail(ErrFellBehind)
	w.behind = true
	w.queue, w.bytes = nil, 0
	w.cond.Broadcast()
}

// fail records the connection's failure, once: every later write is
// refused with err and ReadMessage returns it. w.mu is held.
func (w *wsConn) fail(err error) {
	if w.err == nil {
		w.err = err
		close(w.failed)
	}
}

// write writes one message, for as long as the client takes to read it:
// after stallAfter the client has fallen behind (as if its queue had
// overflowed: nothing more is queued for it, and the write goes on, so that
// a client that reads again is told why), and after abandonAfter the
// connection is closed. (A deadline on the write itself would close the
// connection at once: the library closes it when a write's context ends.)
func (w *wsConn) write(msg []byte) error {
	stalled := time.AfterFunc(w.limits.stallAfter, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err == nil && !w.closing {
			w.fellBehind(fmt.Sprintf("a message unread for %s", w.limits.stallAfter))
		}
	})
	abandon := time.AfterFunc(w.limits.abandonAfter, func() {
		w.log.Info("web: a client that stopped reading never read again; closing its connection without a reason", "after", w.limits.abandonAfter)
		_ = w.c.CloseNow()
	})
	err := w.c.Write(context.Background(), websocket.MessageText, msg)
	stalled.Stop()
	abandon.Stop()
	return err
}

// writer writes the queue to the socket, in order, until Close, a failed
// write or the client falls behind.
func (w *wsConn) writer() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && w.err == nil && !w.closing {
			w.cond.Wait()
		}
		if w.err != nil {
			behind := w.behind
			w.mu.Unlock()
			if behind {
				w.closeBehind()
			}
			return
		}
		if len(w.queue) == 0 { // closing, and everything is written
			w.mu.Unlock()
			return
		}
		msg := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.bytes -= int64(len(msg))
		w.mu.Unlock()

		if err := w.write(msg); err != nil {
			w.mu.Lock()
			if w.err == nil {
				w.log.Debug("web: writing to a client failed; closing its connection", "error", err)
				w.fail(fmt.Errorf("web: writing a WebSocket message: %w", err))
			} else if w.behind {
				// The client fell behind while this write was blocked,
				// and the write failed: the connection is gone.
				w.mu.Unlock()
				_ = w.c.CloseNow()
				return
			}
			w.queue, w.bytes = nil, 0
			w.mu.Unlock()
			_ = w.c.CloseNow()
			return
		}
	}
}

// closeBehind tells a client that fell behind why it is disconnected, and
// disconnects it.
func (w *wsConn) closeBehind() {
	ctx, cancel := context.WithTimeout(context.Background(), noteTimeout)
	err := w.c.Write(ctx, websocket.MessageText, fellBehindNote)
	cancel()
	if err != nil {
		_ = w.c.CloseNow()
		return
	}
	_ = w.c.Close(CloseFellBehind, FellBehindReason)
}

// Close writes what is queued (for at most closeDrain), then closes the
// WebSocket normally. A connection that fell behind is left to its writer,
// which tells the client why and closes it (the rpc server ends as soon as
// a write fails, long before a stalled client reads again).
func (w *wsConn) Close() error {
	w.mu.Lock()
	w.closing = true
	behind := w.behind
	w.cond.Broadcast()
	w.mu.Unlock()
	if behind {
		return nil
	}
	t := time.NewTimer(closeDrain)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
		w.log.Debug("web: queued messages not written before the connection closed")
		_ = w.c.CloseNow()
		<-w.done
		return nil
	}
	err := w.c.Close(websocket.StatusNormalClosure, "")
	if err != nil && websocket.CloseStatus(err) != -1 {
		return nil
	}
	return err
}

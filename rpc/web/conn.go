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
	w := &wsConn{c: c, log: log, limits: limits, done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.writer()
	return w
}

// ReadMessage reads one message, keeping at most max bytes of it.
func (w *wsConn) ReadMessage(ctx context.Context, max int64) ([]byte, int64, bool, error) {
	typ, r, err := w.c.Reader(ctx)
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
			return nil, 0, false, io.EOF
		}
		if errors.Is(err, io.EOF) {
			return nil, 0, false, io.EOF
		}
		return nil, 0, false, fmt.Errorf("web: reading a WebSocket message: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, 0, false, fmt.Errorf("web: reading a WebSocket message: %w", err)
	}
	if int64(len(data)) > max {
		rest, err := io.Copy(io.Discard, r)
		if err != nil {
			return nil, 0, false, fmt.Errorf("web: discarding an oversized WebSocket message: %w", err)
		}
		return nil, int64(len(data)) + rest, typ == websocket.MessageBinary, nil
	}
	return data, int64(len(data)), typ == websocket.MessageBinary, nil
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
	w.log.Warn("web: a client stopped reading; closing its connection", "why", why, "queuedMessages", len(w.queue),
		"queuedBytes", w.bytes, "limitMessages", w.limits.messages, "limitBytes", w.limits.bytes)
	w.err, w.behind = ErrFellBehind, true
	w.queue, w.bytes = nil, 0
	w.cond.Broadcast()
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
		w.log.Warn("web: a client that stopped reading never read again; closing its connection without a reason", "after", w.limits.abandonAfter)
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
				w.err = fmt.Errorf("web: writing a WebSocket message: %w", err)
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

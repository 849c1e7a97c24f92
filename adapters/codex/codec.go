package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
)

// Codex app-server speaks JSON-RPC 2.0 without the "jsonrpc" member, one
// JSON object per line. jsonrpc2 v1's NDJSON stream rejects such
// messages, so this file is a small codec of its own: requests
// {"method","id","params"}, responses {"id","result"|"error"}, notifications
// {"method","params"} (plus the envelope field "emittedAtMs").

// message is any line in either direction.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object as app-server sends it.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("codex app-server error %d: %s", e.Code, e.Message)
}

// errConnClosed is returned by calls on a connection whose peer went away.
var errConnClosed = errors.New("codex app-server connection closed")

// handler receives what the peer sends that is not a response. All three
// run on the reader goroutine, one at a time, in line order.
type handler interface {
	// notification is a message with a method and no id.
	notification(method string, params json.RawMessage, raw []byte)
	// request is a server-to-client request; the handler must answer it
	// (conn.reply or conn.replyError) and must not block on another call.
	request(id json.RawMessage, method string, params json.RawMessage, raw []byte)
	// badLine is a line that is not a JSON-RPC message.
	badLine(raw []byte, err error)
}

// conn is one newline-delimited JSON-RPC connection.
type conn struct {
	w   io.Writer
	wmu sync.Mutex
	h   handler

	next    atomic.Int64
	mu      sync.Mutex
	pending map[string]chan message
	closed  bool
	done    chan struct{}
}

func newConn(w io.Writer, h handler) *conn {
	return &conn{w: w, h: h, pending: map[string]chan message{}, done: make(chan struct{})}
}

// idKey normalises an id so 7 and "7" and 7.0 from the peer all match.
func idKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return string(raw)
}

// readLoop reads lines until r ends, dispatching each. It closes the
// connection (failing pending calls) when it returns.
func (c *conn) readLoop(r io.Reader) {
	// The end of output, a read error or an endless line all end the
	// connection; the process's exit tells the rest.
	_ = procutil.ReadLines(r, c.dispatch)
	c.close()
}

func (c *conn) dispatch(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		c.h.badLine(line, fmt.Errorf("not JSON: %w", err))
		return
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method != "" && hasID:
		c.h.request(m.ID, m.Method, m.Params, line)
	case m.Method != "":
		c.h.notification(m.Method, m.Params, line)
	case hasID && (m.Result != nil || m.Error != nil):
		key := idKey(m.ID)
		c.mu.Lock()
		ch := c.pending[key]
		delete(c.pending, key)
		c.mu.Unlock()
		if ch == nil {
			c.h.badLine(line, fmt.Errorf("response to unknown request id %s", m.ID))
			return
		}
		ch <- m
	default:
		c.h.badLine(line, errors.New("neither a request, a response nor a notification"))
	}
}

func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for k, ch := range c.pending {
		close(ch)
		delete(c.pending, k)
	}
	close(c.done)
}

func (c *conn) write(v any) error {
	if err := procutil.WriteJSONLine(&c.wmu, c.w, v); err != nil {
		return fmt.Errorf("codex: write to app-server: %w", err)
	}
	return nil
}

// call sends a request and waits for its response, decoding the result into
// out (when non-nil). A JSON-RPC error comes back as *rpcError.
func (c *conn) call(ctx context.Context, method string, params, out any) error {
	id := c.next.Add(1)
	key := strconv.FormatInt(id, 10)
	ch := make(chan message, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, errConnClosed)
	}
	c.pending[key] = ch
	c.mu.Unlock()
	if params == nil {
		params = struct{}{}
	}
	if err := c.write(map[string]any{"method": method, "id": id, "params": params}); err != nil {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
		return err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: %w", method, errConnClosed)
		}
		if m.Error != nil {
			return m.Error
		}
		if out != nil && len(m.Result) > 0 {
			if err := json.Unmarshal(m.Result, out); err != nil {
				return fmt.Errorf("codex: decode %s result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
		return ctx.Err()
	}
}

// notify sends a notification (no id, no answer).
func (c *conn) notify(method string, params any) error {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	return c.write(m)
}

// reply answers a server request.
func (c *conn) reply(id json.RawMessage, result any) error {
	return c.write(map[string]any{"id": id, "result": result})
}

// replyError answers a server request with an error.
func (c *conn) replyError(id json.RawMessage, code int, msg string) error {
	return c.write(map[string]any{"id": id, "error": map[string]any{"code": code, "message": msg}})
}

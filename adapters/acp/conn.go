package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
)

// conn is a newline-delimited JSON-RPC 2.0 connection to an ACP agent.
// Requests flow both ways: the client calls the agent (initialize,
// session/prompt…) and the agent calls the client (session/request_permission,
// fs/*…). Incoming requests and notifications are handled in order on the
// reading goroutine, so session/update notifications are mapped in the order
// the agent sent them, and every notification sent before a response has been
// handled when that response is delivered.
//
// A small codec of our own is used rather than a general JSON-RPC library so
// that a malformed line from the agent is kept as data instead of closing the
// connection.
type conn struct {
	w   io.Writer
	wmu sync.Mutex

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan rpcResponse
	closed  bool
	err     error
	done    chan struct{}

	handler connHandler
}

// connHandler receives what the agent sends that is not a response.
type connHandler interface {
	// notify handles a notification (no id).
	notify(method string, params json.RawMessage)
	// request handles a request and returns its result or error.
	request(method string, params json.RawMessage) (any, *rpcError)
	// malformed is told about a line that is not a JSON-RPC message.
	malformed(line []byte, err error)
}

// asyncHandler is implemented by handlers some of whose requests wait long
// (a person's answer): those run on their own goroutine, so the reader
// keeps delivering responses and notifications meanwhile.
type asyncHandler interface {
	async(method string) bool
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	if len(e.Data) > 0 && string(e.Data) != "null" {
		return fmt.Sprintf("%s (code %d, data %s)", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// rpcResponse is a response delivered to a caller.
type rpcResponse struct {
	result json.RawMessage
	err    error
}

// wireMessage is any JSON-RPC message, decoded loosely.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// errConnClosed is returned to callers once the agent's output has ended.
var errConnClosed = errors.New("acp: agent connection closed")

func newConn(w io.Writer, h connHandler) *conn {
	return &conn{w: w, pending: map[int64]chan rpcResponse{}, done: make(chan struct{}), handler: h}
}

// serve reads messages from r until it ends, then fails every pending call.
func (c *conn) serve(r io.Reader) {
	err := procutil.ReadLines(r, c.dispatch)
	switch {
	case err == nil:
		err = errConnClosed
	case errors.Is(err, procutil.ErrLineTooLong):
		err = fmt.Errorf("acp: agent sent %w", err)
	}
	c.shutdown(err)
}

func (c *conn) dispatch(line []byte) {
	var m wireMessage
	if err := json.Unmarshal(line, &m); err != nil {
		c.handler.malformed(line, err)
		return
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method != "" && hasID:
		if a, ok := c.handler.(asyncHandler); ok && a.async(m.Method) {
			go func() {
				res, rerr := c.handler.request(m.Method, m.Params)
				c.reply(m.ID, res, rerr)
			}()
			return
		}
		res, rerr := c.handler.request(m.Method, m.Params)
		c.reply(m.ID, res, rerr)
	case m.Method != "":
		c.handler.notify(m.Method, m.Params)
	case hasID:
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			c.handler.malformed(line, fmt.Errorf("response id %s is not one of ours", m.ID))
			return
		}
		c.mu.Lock()
		ch, ok := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if !ok {
			return // a call its caller abandoned
		}
		if m.Error != nil {
			ch <- rpcResponse{err: m.Error}
		} else {
			ch <- rpcResponse{result: m.Result}
		}
	default:
		c.handler.malformed(line, errors.New("neither a request, a notification nor a response"))
	}
}

func (c *conn) shutdown(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.err = err
	for id, ch := range c.pending {
		ch <- rpcResponse{err: err}
		delete(c.pending, id)
	}
	close(c.done)
}

func (c *conn) write(v any) error {
	if err := procutil.WriteJSONLine(&c.wmu, c.w, v); err != nil {
		return fmt.Errorf("acp: write to agent: %w", err)
	}
	return nil
}

func (c *conn) reply(id json.RawMessage, result any, rerr *rpcError) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		msg["error"] = rerr
	} else {
		if result == nil {
			result = json.RawMessage("null")
		}
		msg["result"] = result
	}
	_ = c.write(msg) // a dead agent is noticed by the reader
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	return c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// start sends a request and returns the channel its response arrives on.
func (c *conn) start(method string, params any) (int64, <-chan rpcResponse, error) {
	ch := make(chan rpcResponse, 1)
	c.mu.Lock()
	if c.closed {
		err := c.err
		c.mu.Unlock()
		return 0, nil, err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		c.forget(id)
		return 0, nil, err
	}
	return id, ch, nil
}

// forget drops a pending call whose caller gave up.
func (c *conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// call sends a request and waits for its response or ctx's end.
func (c *conn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id, ch, err := c.start(method, params)
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	}
}

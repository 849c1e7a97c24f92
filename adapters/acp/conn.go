package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/bridge-dev/bridge/adapters/internal/ndjson"
)

// conn is the newline-delimited JSON-RPC 2.0 connection to an ACP agent
// (the adapters' shared ndjson.Conn). Requests flow both ways: the client
// calls the agent (initialize, session/prompt…) and the agent calls the
// client (session/request_permission, fs/*…). Incoming requests and
// notifications are handled in order on the reading goroutine, so
// session/update notifications are mapped in the order the agent sent
// them, and every notification sent before a response has been handled
// when that response is delivered.
type conn struct {
	*ndjson.Conn
	handler connHandler
	done    <-chan struct{}
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
type rpcError = ndjson.Error

// wireMessage is any JSON-RPC message, decoded loosely.
type wireMessage = ndjson.Message

// rpcResponse is a response delivered to a caller.
type rpcResponse = ndjson.Response

// errConnClosed is returned to callers once the agent's output has ended.
var errConnClosed = errors.New("acp: agent connection closed")

func newConn(w io.Writer, h connHandler) *conn {
	c := &conn{handler: h}
	c.Conn = ndjson.New(w, wire{c}, ndjson.Options{Name: "acp: agent", Version2: true, Closed: errConnClosed})
	c.done = c.Conn.Done()
	return c
}

// wire turns ndjson's handler calls into the adapter's.
type wire struct{ c *conn }

func (w wire) Notification(method string, params json.RawMessage, _ []byte) {
	w.c.handler.notify(method, params)
}

func (w wire) Request(id json.RawMessage, method string, params json.RawMessage, _ []byte) {
	answer := func() {
		res, rerr := w.c.handler.request(method, params)
		if rerr != nil {
			_ = w.c.ReplyError(id, rerr) // a dead agent is noticed by the reader
			return
		}
		_ = w.c.Reply(id, res)
	}
	if a, ok := w.c.handler.(asyncHandler); ok && a.async(method) {
		go answer()
		return
	}
	answer()
}

func (w wire) Malformed(line []byte, err error) { w.c.handler.malformed(line, err) }

// serve reads messages from r until it ends, then fails every pending call.
func (c *conn) serve(r io.Reader) { _ = c.Serve(r) }

// notify sends a notification.
func (c *conn) notify(method string, params any) error { return c.Notify(method, params) }

// start sends a request and returns the channel its response arrives on.
func (c *conn) start(method string, params any) (int64, <-chan rpcResponse, error) {
	ch, err := c.Start(method, params)
	return 0, ch, err
}

// call sends a request and waits for its response or ctx's end.
func (c *conn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.Call(ctx, method, params)
}

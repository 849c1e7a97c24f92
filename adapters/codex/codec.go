package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/bridge-dev/bridge/adapters/internal/ndjson"
)

// Codex app-server speaks JSON-RPC 2.0 without the "jsonrpc" member, one
// JSON object per line: requests {"method","id","params"}, responses
// {"id","result"|"error"}, notifications {"method","params"} (plus the
// envelope field "emittedAtMs"). The connection is the adapters' shared
// ndjson.Conn, writing no "jsonrpc" member.

// message is any line in either direction.
type message = ndjson.Message

// rpcError is a JSON-RPC error object as app-server sends it.
type rpcError = ndjson.Error

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

// wire turns ndjson's handler calls into the adapter's.
type wire struct{ h handler }

func (w wire) Notification(method string, params json.RawMessage, raw []byte) {
	w.h.notification(method, params, raw)
}

func (w wire) Request(id json.RawMessage, method string, params json.RawMessage, raw []byte) {
	w.h.request(id, method, params, raw)
}

func (w wire) Malformed(raw []byte, err error) { w.h.badLine(raw, err) }

// conn is one newline-delimited JSON-RPC connection to app-server.
type conn struct{ *ndjson.Conn }

func newConn(w io.Writer, h handler) *conn {
	return &conn{ndjson.New(w, wire{h}, ndjson.Options{Name: "codex app-server", Closed: errConnClosed})}
}

// readLoop reads lines until r ends, dispatching each; the end of output,
// a read error or an endless line all close the connection (the process's
// exit tells the rest).
func (c *conn) readLoop(r io.Reader) { _ = c.Serve(r) }

// call sends a request and waits for its response, decoding the result into
// out (when non-nil). A JSON-RPC error comes back as *rpcError.
func (c *conn) call(ctx context.Context, method string, params, out any) error {
	if params == nil {
		params = struct{}{}
	}
	res, err := c.Call(ctx, method, params)
	if err != nil {
		if errors.Is(err, errConnClosed) {
			return fmt.Errorf("%s: %w", method, err)
		}
		return err
	}
	if out != nil && len(res) > 0 {
		if err := json.Unmarshal(res, out); err != nil {
			return fmt.Errorf("codex: decode %s result: %w", method, err)
		}
	}
	return nil
}

// notify sends a notification (no id, no answer).
func (c *conn) notify(method string, params any) error { return c.Notify(method, params) }

// reply answers a server request.
func (c *conn) reply(id json.RawMessage, result any) error { return c.Reply(id, result) }

// replyError answers a server request with an error.
func (c *conn) replyError(id json.RawMessage, code int, msg string) error {
	return c.ReplyError(id, &rpcError{Code: code, Message: msg})
}

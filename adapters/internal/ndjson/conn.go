// Package ndjson is the newline-delimited JSON-RPC 2.0 connection the
// adapters that talk to a harness over its standard input and output share
// (Codex app-server, ACP agents): one JSON object per line, requests both
// ways, a pending-call table, and one shutdown that fails every call still
// waiting.
//
// It is a small codec of its own rather than a general JSON-RPC library:
// Codex app-server leaves out the "jsonrpc" member (which jsonrpc2 v1's
// NDJSON stream rejects), and a malformed line from a harness is kept as
// data for the adapter instead of closing the connection.
package ndjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if len(e.Data) > 0 && string(e.Data) != "null" {
		return fmt.Sprintf("%s (code %d, data %s)", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// Message is any line, decoded loosely.
type Message struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Handler receives what the peer sends that is not a response. Its methods
// run on the reading goroutine, one at a time, in line order, so a
// notification sent before a response has been handled when the response
// is delivered. Request must answer (Reply or ReplyError), on the reader or
// on a goroutine of its own when the answer waits (a person's choice); it
// must not wait on a call of the same connection on the reader.
type Handler interface {
	Notification(method string, params json.RawMessage, raw []byte)
	Request(id json.RawMessage, method string, params json.RawMessage, raw []byte)
	// Malformed is told about a line that is not a JSON-RPC message, or a
	// response to a request this side never sent.
	Malformed(raw []byte, err error)
}

// Options configure a Conn.
type Options struct {
	// Name names the peer in errors ("codex app-server", "acp agent").
	Name string
	// Version2 writes "jsonrpc": "2.0" on every message.
	Version2 bool
	// Closed is the error calls get once the peer's output ended (default:
	// "<Name> connection closed").
	Closed error
}

// Conn is one newline-delimited JSON-RPC connection.
type Conn struct {
	w    io.Writer
	wmu  sync.Mutex
	h    Handler
	opts Options

	mu        sync.Mutex
	nextID    int64
	pending   map[string]chan Response
	abandoned map[string]bool // calls whose callers gave up; their late responses are dropped
	closed    bool
	err       error
	done      chan struct{}
}

// Response is the outcome of a call: its result, or a *Error, or the
// error that closed the connection.
type Response struct {
	Result json.RawMessage
	Err    error
}

// New returns a connection writing to w; call Serve with the peer's output.
func New(w io.Writer, h Handler, opts Options) *Conn {
	if opts.Closed == nil {
		opts.Closed = errors.New(opts.Name + " connection closed")
	}
	return &Conn{w: w, h: h, opts: opts, pending: map[string]chan Response{}, abandoned: map[string]bool{}, done: make(chan struct{})}
}

// Serve reads lines from r until it ends, then closes the connection,
// failing every pending call. It returns why it ended (nil at the end of
// output).
func (c *Conn) Serve(r io.Reader) error {
	err := procutil.ReadLines(r, c.dispatch)
	cause := err
	switch {
	case err == nil:
		cause = c.opts.Closed
	case errors.Is(err, procutil.ErrLineTooLong):
		cause = fmt.Errorf("%w: %s sent %w", c.opts.Closed, c.opts.Name, err)
	}
	c.Close(cause)
	return err
}

// Done is closed once the connection is closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection closed (nil while it is open).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close fails every pending call with err; later calls fail with it too.
func (c *Conn) Close(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if err == nil {
		err = c.opts.Closed
	}
	c.closed, c.err = true, err
	for k, ch := range c.pending {
		ch <- Response{Err: err}
		delete(c.pending, k)
	}
	close(c.done)
}

// IDKey normalises an id so that 7, "7" and 7.0 from a peer all match.
func IDKey(raw json.RawMessage) string {
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

func (c *Conn) dispatch(line []byte) {
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		c.h.Malformed(line, fmt.Errorf("not JSON: %w", err))
		return
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method != "" && hasID:
		c.h.Request(m.ID, m.Method, m.Params, line)
	case m.Method != "":
		c.h.Notification(m.Method, m.Params, line)
	case hasID && (m.Result != nil || m.Error != nil):
		key := IDKey(m.ID)
		c.mu.Lock()
		ch := c.pending[key]
		delete(c.pending, key)
		dropped := c.abandoned[key]
		delete(c.abandoned, key)
		c.mu.Unlock()
		switch {
		case ch != nil && m.Error != nil:
			ch <- Response{Err: m.Error}
		case ch != nil:
			ch <- Response{Result: m.Result}
		case !dropped:
			c.h.Malformed(line, fmt.Errorf("response to unknown request id %s", m.ID))
		}
	default:
		c.h.Malformed(line, errors.New("neither a request, a response nor a notification"))
	}
}

func (c *Conn) write(m any) error {
	if err := procutil.WriteJSONLine(&c.wmu, c.w, m); err != nil {
		return fmt.Errorf("write to %s: %w", c.opts.Name, err)
	}
	return nil
}

// Start sends a request and returns the channel its response arrives on;
// the call stays pending until the peer answers or the connection closes.
func (c *Conn) Start(method string, params any) (<-chan Response, error) {
	_, ch, err := c.start(method, params)
	return ch, err
}

func (c *Conn) start(method string, params any) (string, chan Response, error) {
	ch := make(chan Response, 1)
	c.mu.Lock()
	if c.closed {
		err := c.err
		c.mu.Unlock()
		return "", nil, err
	}
	c.nextID++
	key := strconv.FormatInt(c.nextID, 10)
	id := c.nextID
	c.pending[key] = ch
	c.mu.Unlock()
	if err := c.write(request{JSONRPC: c.version(), ID: id, Method: method, Params: params}); err != nil {
		c.forget(key, false)
		return "", nil, err
	}
	return key, ch, nil
}

// Call sends a request and waits for its result, or ctx's end. A JSON-RPC
// error comes back as *Error; a closed connection as Err().
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	key, ch, err := c.start(method, params)
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.Result, r.Err
	case <-ctx.Done():
		c.forget(key, true)
		return nil, ctx.Err()
	}
}

// forget drops a pending call; an abandoned one's late response is dropped
// quietly.
func (c *Conn) forget(key string, abandoned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[key]; !ok {
		return
	}
	delete(c.pending, key)
	if abandoned {
		c.abandoned[key] = true
	}
}

// Notify sends a notification; params nil leaves the member out.
func (c *Conn) Notify(method string, params any) error {
	return c.write(notification{JSONRPC: c.version(), Method: method, Params: params})
}

// Reply answers a request of the peer; a nil result is null.
func (c *Conn) Reply(id json.RawMessage, result any) error {
	if result == nil {
		result = json.RawMessage("null")
	}
	return c.write(reply{JSONRPC: c.version(), ID: id, Result: result})
}

// ReplyError answers a request of the peer with an error.
func (c *Conn) ReplyError(id json.RawMessage, e *Error) error {
	return c.write(reply{JSONRPC: c.version(), ID: id, Error: e})
}

// version is the jsonrpc member of the messages Conn writes: "2.0", or
// absent.
func (c *Conn) version() string {
	if c.opts.Version2 {
		return "2.0"
	}
	return ""
}

// The messages Conn writes. A request's params are null when nil; a
// notification leaves them out.
type (
	request struct {
		JSONRPC string `json:"jsonrpc,omitempty"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}
	notification struct {
		JSONRPC string `json:"jsonrpc,omitempty"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}
	// reply carries a result or an error.
	reply struct {
		JSONRPC string          `json:"jsonrpc,omitempty"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *Error          `json:"error,omitempty"`
	}
)

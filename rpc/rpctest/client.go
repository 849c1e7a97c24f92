// Package rpctest is the one test client of Bridge's JSON-RPC contract, in
// the manner of gopls's fake editor: typed calls in the contract's types
// (Client implements schema.Backend over the wire), awaited expectations on
// what the server sends (notifications, requests, replies, in the order
// they came), and raw frames for what a real client never sends.
//
// A Client is transport-agnostic: New takes the function that sends one
// message body, and the transport feeds what it receives to Deliver (or
// runs ReadFrames on an LSP-framed stream) and calls End when it ends.
// The rpc tests run it against rpc.Serve over pipes; the cmd/bridge tests
// against a bridge process's stdio, or a WebSocket of `bridge web`.
package rpctest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/schema"
)

// Message is any JSON-RPC message as the client sees it.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
	// NotesBefore, on a reply, is how many notifications and requests
	// from the server arrived before it.
	NotesBefore int `json:"-"`
}

// IsReply reports whether m answers one of the client's requests.
func (m Message) IsReply() bool { return m.Method == "" }

// IsNotification reports whether m is a notification from the server.
func (m Message) IsNotification() bool { return m.Method != "" && len(m.ID) == 0 }

// IsRequest reports whether m is a request from the server.
func (m Message) IsRequest() bool { return m.Method != "" && len(m.ID) > 0 }

// Error is a JSON-RPC error object. As a Go error it is what a typed call
// returns for an error reply.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("error %d %s (data %s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("error %d %s", e.Code, e.Message)
}

// ErrorData decodes the data member (the contract's ErrorData); zero when
// there is none or it does not decode.
func (e *Error) ErrorData() schema.ErrorData {
	var d schema.ErrorData
	if e != nil && len(e.Data) > 0 {
		_ = json.Unmarshal(e.Data, &d)
	}
	return d
}

// DataCode is data.code, the domain failure class ("" when none).
func (e *Error) DataCode() string { return string(e.ErrorData().Code) }

// AsError returns err's *Error (nil when err is not an error reply).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// Options configure a Client.
type Options struct {
	// ReplyWait bounds the wait for a reply; NoteWait for an awaited
	// message. Zero waits until the test binary's timeout.
	ReplyWait, NoteWait time.Duration
	// Diagnostics, when set, says more when an expectation fails (the
	// server's stderr or log).
	Diagnostics func() string
	// OnRequest answers the server's requests until SetOnRequest replaces
	// it; nil answers "method not found".
	OnRequest func(Message) (any, *Error)
	// FailWrites fails the test when a message cannot be sent (the
	// server stopped reading); unset, it is only logged (a process that
	// exited).
	FailWrites bool
}

// Client is a JSON-RPC client for tests. Its methods fail the test (with
// t.Fatal) when the transport breaks or an expectation times out; error
// replies are values.
type Client struct {
	t    testing.TB
	send func([]byte) error
	opts Options

	wmu sync.Mutex // serialises send and raw writes
	raw io.Writer  // the framed stream (NewFramed), for WriteRaw
	mu  sync.Mutex
	seq int
	// msgs is every message received, in order; notes counts those that
	// are not replies.
	msgs      []Message
	notes     int
	changed   chan struct{}
	done      chan struct{}
	endErr    error
	ended     bool
	onRequest func(Message) (any, *Error)
	// taken marks the replies Reply and the typed calls returned (by
	// index in msgs): each reply is returned once, so two awaits of id
	// null get two replies.
	taken map[int]bool
}

// New returns a client that sends each message body with send.
func New(t testing.TB, send func(body []byte) error, o Options) *Client {
	c := &Client{t: t, send: send, opts: o, changed: make(chan struct{}), done: make(chan struct{}), onRequest: o.OnRequest}
	t.Cleanup(func() {
		c.mu.Lock()
		err := c.endErr
		c.mu.Unlock()
		var pe *ProtocolError
		if errors.As(err, &pe) {
			t.Errorf("the server broke the protocol: %v", err)
		}
	})
	return c
}

// NewFramed returns a client speaking LSP frames: it writes to w and
// reads r (strictly, see ReadFrames) until it ends.
func NewFramed(t testing.TB, r io.Reader, w io.Writer, o Options) *Client {
	c := New(t, FrameWriter(w), o)
	c.raw = w
	go c.ReadFrames(r)
	return c
}

// WriteRaw writes b to a framed client's stream as it is (a broken frame,
// two frames at once...).
func (c *Client) WriteRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.raw == nil {
		return errors.New("rpctest: WriteRaw on a client that is not framed")
	}
	_, err := c.raw.Write(b)
	return err
}

// Deliver files one message body from the server (it is copied). A
// request is answered by the OnRequest function, on a goroutine of its
// own. The error says why body is not a JSON-RPC 2.0 message.
func (c *Client) Deliver(body []byte) error {
	m, err := decode(body)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if m.IsReply() {
		m.NotesBefore = c.notes
	} else {
		c.notes++
	}
	c.msgs = append(c.msgs, m)
	close(c.changed)
	c.changed = make(chan struct{})
	h := c.onRequest
	c.mu.Unlock()
	if m.IsRequest() {
		go c.answer(h, m)
	}
	return nil
}

// End records that the server's output ended, with err (io.EOF for a
// plain end). Awaits still pending fail.
func (c *Client) End(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.ended, c.endErr = true, err
	close(c.changed)
	c.changed = make(chan struct{})
	close(c.done)
}

// Done is closed when the server's output has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// EndErr is why the server's output ended (nil while it has not).
func (c *Client) EndErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endErr
}

// SetOnRequest replaces the function answering the server's requests. It
// returns a result or an error; returning neither leaves the request
// unanswered (the test answers with Respond, or never).
func (c *Client) SetOnRequest(fn func(Message) (any, *Error)) {
	c.mu.Lock()
	c.onRequest = fn
	c.mu.Unlock()
}

// AnswerNull answers every request with a null result.
func AnswerNull(Message) (any, *Error) { return json.RawMessage("null"), nil }

func (c *Client) answer(h func(Message) (any, *Error), m Message) {
	if h == nil {
		c.Respond(m.ID, nil, &Error{Code: -32601, Message: "not supported by the test client"})
		return
	}
	res, werr := h(m)
	if res == nil && werr == nil {
		return
	}
	c.Respond(m.ID, res, werr)
}

// Respond answers the server's request id with result, or werr when set.
func (c *Client) Respond(id json.RawMessage, result any, werr *Error) {
	reply := response{JSONRPC: "2.0", ID: id}
	if werr != nil {
		reply.Error = werr
	} else {
		if result == nil {
			result = json.RawMessage("null")
		}
		reply.Result = result
	}
	_ = c.WriteBody(mustJSON(reply))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// WriteBody sends body as one message, as it is.
func (c *Client) WriteBody(body []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.send(body)
}

// NextID returns a fresh numeric request id.
func (c *Client) NextID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	return c.seq
}

// Send sends a request with id (an int, a string, or raw JSON), or a
// notification when id is nil; params nil sends none.
func (c *Client) Send(id any, method string, params any) {
	b, err := json.Marshal(request{JSONRPC: "2.0", ID: id, Method: method, Params: params})
	if err != nil {
		c.t.Fatalf("%s: params: %v", method, err)
	}
	if err := c.WriteBody(b); err != nil {
		if c.opts.FailWrites {
			c.t.Errorf("sending %s: %v", method, err)
		} else {
			c.t.Logf("sending %s: %v", method, err)
		}
	}
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) { c.Send(nil, method, params) }

// Cancel sends $/cancelRequest for the request whose id's JSON text is
// rawID (as Request returns it).
func (c *Client) Cancel(rawID string) {
	var id schema.RequestID
	if err := json.Unmarshal([]byte(rawID), &id); err != nil {
		c.t.Fatalf("cancelling request %s: %v", rawID, err)
	}
	c.Notify(schema.NoticeCancelRequest.Name, schema.CancelParams{ID: id})
}

// Request sends a request with a fresh id and returns the id's JSON text.
func (c *Client) Request(method string, params any) string {
	id := c.NextID()
	c.Send(id, method, params)
	return strconv.Itoa(id)
}

// Reply awaits the reply whose id's JSON text is rawID ("null" for a
// reply to a message that had no readable id) that no Reply returned yet.
func (c *Client) Reply(rawID string) Message {
	c.t.Helper()
	m, err := c.wait(context.Background(), "the reply to request "+rawID, c.opts.ReplyWait, nil, c.replyTo(rawID))
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// replyTo matches the first reply to rawID not taken yet, and takes it.
func (c *Client) replyTo(rawID string) func(int, Message) bool {
	return func(i int, m Message) bool {
		if !m.IsReply() || string(m.ID) != rawID {
			return false
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.taken[i] {
			return false
		}
		if c.taken == nil {
			c.taken = map[int]bool{}
		}
		c.taken[i] = true
		return true
	}
}

// Call sends a request and awaits its reply.
func (c *Client) Call(method string, params any) Message {
	c.t.Helper()
	return c.Reply(c.Request(method, params))
}

// MustCall calls method and decodes its result into out (nil: ignored);
// an error reply fails the test.
func (c *Client) MustCall(method string, params, out any) {
	c.t.Helper()
	m := c.Call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: %v", method, m.Error)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s: decoding result %s: %v", method, m.Result, err)
		}
	}
}

// Await blocks until a message received (from the first on) satisfies
// pred, and returns the first that does. It fails the test when the
// server's output ends first, or after Options.NoteWait.
func (c *Client) Await(what string, pred func(Message) bool) Message {
	c.t.Helper()
	return c.await(what, c.opts.NoteWait, pred)
}

func (c *Client) await(what string, wait time.Duration, pred func(Message) bool) Message {
	c.t.Helper()
	m, err := c.wait(context.Background(), what, wait, nil, func(_ int, m Message) bool { return pred(m) })
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// wait is await returning its failure; when ctx ends first it calls
// onCancel once (if set) and waits on, else it returns ctx's error.
func (c *Client) wait(ctx context.Context, what string, wait time.Duration, onCancel func(), pred func(int, Message) bool) (Message, error) {
	var deadline <-chan time.Time
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		deadline = timer.C
	}
	seen := 0
	for {
		c.mu.Lock()
		msgs, ch, ended, endErr := c.msgs, c.changed, c.ended, c.endErr
		c.mu.Unlock()
		for ; seen < len(msgs); seen++ {
			if pred(seen, msgs[seen]) {
				return msgs[seen], nil
			}
		}
		if ended {
			return Message{}, fmt.Errorf("awaiting %s: the server's output ended: %v%s", what, endErr, c.diagnostics())
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if onCancel == nil {
				return Message{}, fmt.Errorf("awaiting %s: %w", what, ctx.Err())
			}
			onCancel()
			onCancel, ctx = nil, context.Background()
		case <-deadline:
			return Message{}, fmt.Errorf("awaiting %s: nothing within %s%s", what, wait, c.diagnostics())
		}
	}
}

func (c *Client) diagnostics() string {
	if c.opts.Diagnostics == nil {
		return ""
	}
	return "; server output:\n" + c.opts.Diagnostics()
}

// AwaitNotification awaits a notification of method whose params satisfy
// pred (nil: any).
func (c *Client) AwaitNotification(method string, pred func(params json.RawMessage) bool) Message {
	c.t.Helper()
	return c.Await(method, func(m Message) bool {
		return m.IsNotification() && m.Method == method && (pred == nil || pred(m.Params))
	})
}

// AwaitRequest awaits a request from the server of method.
func (c *Client) AwaitRequest(method string) Message {
	c.t.Helper()
	return c.Await("request "+method, func(m Message) bool { return m.IsRequest() && m.Method == method })
}

// Await awaits notification n whose params, decoded as n's contract type,
// satisfy pred (nil: any), and returns them.
func Await[N any](c *Client, n schema.Notice[N], pred func(N) bool) N {
	c.t.Helper()
	method := n.Name
	var out N
	c.Await(method, func(m Message) bool {
		if !m.IsNotification() || m.Method != method {
			return false
		}
		var n N
		if err := json.Unmarshal(m.Params, &n); err != nil {
			c.t.Errorf("%s params %s: %v", method, m.Params, err)
			return false
		}
		if pred == nil || pred(n) {
			out = n
			return true
		}
		return false
	})
	return out
}

// ParamsAs decodes m's params as P: a server request's, in an OnRequest
// function, in the contract's type.
func ParamsAs[P any](m Message) (P, error) {
	var p P
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return p, fmt.Errorf("%s params %s: %w", m.Method, m.Params, err)
	}
	return p, nil
}

// Notes decodes the params of the notifications n received so far, in
// order, as n's contract type.
func Notes[N any](c *Client, n schema.Notice[N]) []N {
	c.t.Helper()
	method := n.Name
	var out []N
	for _, m := range c.Messages() {
		if m.IsNotification() && m.Method == method {
			var n N
			if err := json.Unmarshal(m.Params, &n); err != nil {
				c.t.Fatalf("%s params %s: %v", method, m.Params, err)
			}
			out = append(out, n)
		}
	}
	return out
}

// Messages returns every message received so far, in order.
func (c *Client) Messages() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.msgs...)
}

// Index returns the position of the first message received that
// satisfies pred, or -1.
func (c *Client) Index(pred func(Message) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.msgs {
		if pred(m) {
			return i
		}
	}
	return -1
}

// Sent returns the notifications and requests of method received so far.
func (c *Client) Sent(method string) []Message {
	var out []Message
	for _, m := range c.Messages() {
		if !m.IsReply() && m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// response is the client's answer to a server request: result, or error
// when set. Members are in name order, as a map's were.
type response struct {
	Error   *Error          `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
	JSONRPC string          `json:"jsonrpc"`
	Result  any             `json:"result,omitempty"`
}

// request is a request, or a notification when ID is nil; Params nil sends
// none. Members are in name order, as a map's were.
type request struct {
	ID      any    `json:"id,omitempty"`
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

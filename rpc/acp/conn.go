package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
)

// JSON-RPC error codes this transport sends itself (the service's errors go
// through rpc.ErrorFor).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	codeNotFound       = -32002 // ACP's "resource not found"
)

// maxLine bounds one incoming message (a prompt with images is large).
const maxLine = 64 << 20

// message is one JSON-RPC 2.0 message in either direction.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

// isRequest: a message with a method and an id expects a reply.
func (m *message) isRequest() bool { return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" }

// conn is the newline-delimited JSON-RPC connection to the client: one
// writer (every message is one line, written whole under a lock) and the
// requests Bridge itself sends, awaiting their replies.
type conn struct {
	wmu sync.Mutex
	w   io.Writer

	done    atomic.Bool // nothing more is written (Serve returned)
	next    atomic.Int64
	mu      sync.Mutex
	waiting map[string]chan *message
	closed  bool
}

func newConn(w io.Writer) *conn {
	return &conn{w: w, waiting: map[string]chan *message{}}
}

// write sends one message as one line.
func (c *conn) write(m any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if c.done.Load() {
		return errClosed
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(b)
	return err
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.write(message{JSONRPC: "2.0", Method: method, Params: raw})
}

// reply answers request id with result (nil result is JSON null).
func (c *conn) reply(id json.RawMessage, result any) error {
	raw, err := json.Marshal(result)
	if err != nil {
		return c.replyError(id, &rpcError{Code: codeInternal, Message: "encoding the result: " + err.Error()})
	}
	return c.write(message{JSONRPC: "2.0", ID: id, Result: raw})
}

// replyError answers request id with an error.
func (c *conn) replyError(id json.RawMessage, e *rpcError) error {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return c.write(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *rpcError       `json:"error"`
	}{"2.0", id, e})
}

// errClosed: the client went away before answering.
var errClosed = errors.New("acp: the client connection is closed")

// call sends a request to the client and waits for its reply. When ctx ends
// first, $/cancel_request is sent and ctx's error returned.
func (c *conn) call(ctx context.Context, method string, params, result any) error {
	id := strconv.FormatInt(c.next.Add(1), 10)
	ch := make(chan *message, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	c.waiting[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}()
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if err := c.write(message{JSONRPC: "2.0", ID: json.RawMessage(id), Method: method, Params: raw}); err != nil {
		return err
	}
	select {
	case m, ok := <-ch:
		if !ok || m == nil {
			return errClosed
		}
		if m.Error != nil {
			return m.Error
		}
		if result != nil && len(m.Result) > 0 {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("acp: the reply to %s: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		_ = c.notify("$/cancel_request", struct {
			RequestID json.RawMessage `json:"requestId"`
		}{json.RawMessage(id)})
		return ctx.Err()
	}
}

// deliver hands a reply to the call awaiting it; a reply nobody awaits is
// dropped.
func (c *conn) deliver(m *message) {
	key := string(bytes.TrimSpace(m.ID))
	if s, err := strconv.Unquote(key); err == nil {
		key = s
	}
	c.mu.Lock()
	ch := c.waiting[key]
	delete(c.waiting, key)
	c.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

// close ends every call still awaiting a reply.
func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for id, ch := range c.waiting {
		close(ch)
		delete(c.waiting, id)
	}
}

// readLines calls fn with each non-blank line of r until r ends. A line
// longer than maxLine ends the reading with an error.
func readLines(r io.Reader, fn func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 {
			if len(buf)+len(chunk) > maxLine {
				return fmt.Errorf("acp: a message is longer than %d bytes", maxLine)
			}
			buf = append(buf, chunk...)
		}
		if err != nil {
			if len(bytes.TrimSpace(buf)) > 0 {
				fn(buf)
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
		if isPrefix {
			continue
		}
		if len(bytes.TrimSpace(buf)) > 0 {
			fn(buf)
		}
		buf = nil
	}
}

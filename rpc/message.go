package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/core"
)

// MessageConn is a message-oriented transport (a WebSocket): each message
// is one whole JSON-RPC message, with no LSP framing.
type MessageConn interface {
	// ReadMessage returns the next message. A message larger than max bytes
	// is not kept: it is consumed and reported with data nil and size its
	// length (or max+1 when the length is unknown). binary reports a
	// message the transport marked as binary rather than text. It returns
	// io.EOF when the peer closed the connection cleanly.
	ReadMessage(ctx context.Context, max int64) (data []byte, size int64, binary bool, err error)
	// WriteMessage sends one message as text.
	WriteMessage(ctx context.Context, data []byte) error
	// Close releases the transport.
	Close() error
}

// ServeMessages runs the same JSON-RPC server as Serve over a message
// transport: the same lifecycle, methods, notifications, cancellation and
// error codes, one message per transport message. It returns when the
// client sends exit, the connection ends or ctx ends, with the exit code
// Serve would return; conn is closed on return.
func ServeMessages(ctx context.Context, conn MessageConn, cfg Config) (exitCode int, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Open == nil {
		return 1, fmt.Errorf("rpc: Config.Open is nil")
	}
	max := cfg.MaxContentLength
	if max <= 0 {
		max = DefaultMaxContentLength
	}
	return serveTransport(ctx, &messageStream{conn: conn, max: max, log: log, done: make(chan struct{})}, cfg, log)
}

// messageStream adapts a MessageConn to the server's transport.
type messageStream struct {
	conn MessageConn
	max  int64
	log  *slog.Logger

	wmu sync.Mutex // one writer at a time
	// replied, when not nil, is told the id of every response written;
	// failed the error of every write that failed.
	replied func(jsonrpc2.ID)
	failed  func(error)

	closeOnce sync.Once
	closeErr  error

	done     chan struct{}
	doneOnce sync.Once
	readErr  error
}

// Read returns the next well-formed message; bad messages are answered and
// skipped, as on stdio.
func (s *messageStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		data, size, binary, err := s.conn.ReadMessage(ctx, s.max)
		if err != nil {
			s.finish(err)
			return nil, 0, err
		}
		var msg jsonrpc2.Message
		var ferr *frameError
		switch {
		case binary:
			ferr = &frameError{err: jsonrpc2.NewError(jsonrpc2.InvalidRequest,
				"invalid request: binary messages are not accepted; send each JSON-RPC message as one text message")}
		case data == nil:
			ferr = &frameError{err: jsonrpc2.Errorf(jsonrpc2.InvalidRequest,
				"message body of %d bytes exceeds the limit of %d bytes; it is discarded", size, s.max)}
		default:
			msg, ferr = decodeBody(data)
		}
		if ferr != nil {
			s.log.Warn("rpc: bad message skipped", "code", int(ferr.err.Code), "error", ferr.err.Message)
			if _, werr := s.Write(ctx, jsonrpc2.NewResponse(ferr.id, nil, ferr.err)); werr != nil {
				err := fmt.Errorf("rpc: answering a bad message: %w", werr)
				s.finish(err)
				return nil, 0, err
			}
			continue
		}
		return msg, size, nil
	}
}

// Write sends msg as one message. Like the stdio stream it ignores
// cancellation of ctx: a reply to a cancelled request must still be sent.
func (s *messageStream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	data, err := jsonrpc2.EncodeMessage(msg)
	if err != nil {
		return 0, fmt.Errorf("rpc: encoding a message: %w", err)
	}
	// Every message is valid UTF-8 (a WebSocket text message holding
	// anything else is a protocol error that closes the connection), as on
	// the stdio stream.
	data = core.ValidJSON(data)
	id, isResponse := responseID(data)
	s.wmu.Lock()
	err = s.conn.WriteMessage(context.WithoutCancel(ctx), data)
	s.wmu.Unlock()
	if isResponse && s.replied != nil {
		s.replied(id)
	}
	if err != nil {
		if s.failed != nil {
			s.failed(err)
		}
		return 0, err
	}
	return int64(len(data)), nil
}

// onReplied sets the function told the id of every response written.
func (s *messageStream) onReplied(f func(jsonrpc2.ID)) { s.replied = f }

// onWriteFailed sets the function told the error of a failed write.
func (s *messageStream) onWriteFailed(f func(error)) { s.failed = f }

// Close releases the transport once.
func (s *messageStream) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.conn.Close() })
	return s.closeErr
}

func (s *messageStream) finish(err error) {
	s.doneOnce.Do(func() {
		if !errors.Is(err, io.EOF) {
			s.readErr = err
		}
		close(s.done)
	})
}

func (s *messageStream) ended() <-chan struct{} { return s.done }

func (s *messageStream) failure() error {
	<-s.done
	return s.readErr
}

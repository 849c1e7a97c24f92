package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"unicode/utf8"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/core"
)

// DefaultMaxContentLength is the largest message body the server accepts
// when Config.MaxContentLength is zero.
const DefaultMaxContentLength = 64 << 20

// lspStream is a jsonrpc2.Stream in LSP Content-Length framing that, unlike
// jsonrpc2's own header stream, survives bad input: a garbled header, an
// oversized body, malformed JSON or an object that is not a JSON-RPC message
// is answered with an error response (id null when none can be read) and
// skipped, and the stream carries on with the next frame. Oversized bodies
// are discarded by streaming, never allocated.
type lspStream struct {
	in     *bufio.Reader
	closer func() error
	out    io.Writer
	max    int64

	// wmu serialises writes and guards wbuf, the reused frame buffer.
	wmu  sync.Mutex
	wbuf []byte
	// replied, when not nil, is told the id of every response written;
	// failed the error of every write that failed.
	replied func(jsonrpc2.ID)
	failed  func(error)
	log     *slog.Logger

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{} // closed by Close

	// done is closed when Read meets a fatal error (end of input or a
	// transport failure); readErr holds it.
	done     chan struct{}
	doneOnce sync.Once
	readErr  error
}

// newLSPStream frames messages read from in and written to out. closer, when
// not nil, is called once by Close to release the transport.
func newLSPStream(in io.Reader, out io.Writer, max int64, log *slog.Logger, closer func() error) *lspStream {
	if max <= 0 {
		max = DefaultMaxContentLength
	}
	return &lspStream{
		in:     bufio.NewReaderSize(in, 64<<10),
		closer: closer,
		out:    out,
		max:    max,
		log:    log,
		done:   make(chan struct{}),
		closed: make(chan struct{}),
	}
}

// frameError is a problem with one incoming frame that is answered and
// skipped rather than ending the connection.
type frameError struct {
	id  jsonrpc2.ID
	err *jsonrpc2.Error
	// skip is the number of body bytes to discard after answering.
	skip int64
}

// Read returns the next well-formed message. Bad frames are answered on the
// write side and skipped; only transport failures and end of input end it.
// Their error is returned only once the stream is closed: jsonrpc2 writes
// nothing after a read error, and the replies still owed for requests read
// before the end of input must reach the client (done tells Serve the input
// ended).
func (s *lspStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		msg, n, ferr, err := s.readOne()
		if err != nil {
			s.finish(err)
			// Not ctx: Serve cancels the connection's context before it
			// has written the last replies.
			<-s.closed
			return nil, 0, err
		}
		if ferr != nil {
			s.log.Warn("rpc: bad frame skipped", "code", int(ferr.err.Code), "error", ferr.err.Message)
			if _, werr := s.Write(ctx, jsonrpc2.NewResponse(ferr.id, nil, ferr.err)); werr != nil {
				err := fmt.Errorf("rpc: answering a bad frame: %w", werr)
				s.finish(err)
				return nil, 0, err
			}
			if ferr.skip > 0 {
				if err := s.discard(ferr.skip); err != nil {
					s.finish(err)
					return nil, 0, err
				}
			}
			continue
		}
		return msg, n, nil
	}
}

// finish records the error that ended reading and closes done.
func (s *lspStream) finish(err error) {
	s.doneOnce.Do(func() {
		if !errors.Is(err, io.EOF) {
			s.readErr = err
		}
		close(s.done)
	})
}

// failure is the transport error that ended reading, nil for a clean end
// of input.
func (s *lspStream) failure() error {
	<-s.done
	return s.readErr
}

// readOne reads one frame. It returns either a message, a frame error to
// answer, or a fatal transport error.
func (s *lspStream) readOne() (jsonrpc2.Message, int64, *frameError, error) {
	length, headerLen, problem, err := s.readHeader()
	if err != nil {
		return nil, 0, nil, err
	}
	if problem != "" {
		if length < 0 {
			// No usable length: the body cannot be skipped. The header
			// reader resynchronises on the next Content-Length line.
			return nil, 0, &frameError{err: jsonrpc2.NewError(jsonrpc2.ParseError, problem)}, nil
		}
		return nil, 0, &frameError{err: jsonrpc2.NewError(jsonrpc2.ParseError, problem), skip: length}, nil
	}
	if length > s.max {
		// Answer first, then stream the body away: it is never allocated.
		return nil, 0, &frameError{err: jsonrpc2.Errorf(jsonrpc2.InvalidRequest,
			"message body of %d bytes exceeds the limit of %d bytes; it is discarded", length, s.max), skip: length}, nil
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(s.in, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, nil, fmt.Errorf("rpc: reading a %d-byte body: %w", length, err)
	}
	n := int64(headerLen) + length
	msg, ferr := decodeBody(body)
	if ferr != nil {
		return nil, 0, ferr, nil
	}
	return msg, n, nil, nil
}

// decodeBody decodes one message body, or returns the frame error that
// answers it. Every transport checks bodies the same way.
func decodeBody(body []byte) (jsonrpc2.Message, *frameError) {
	if !json.Valid(body) {
		return nil, &frameError{err: jsonrpc2.NewError(jsonrpc2.ParseError,
			"parse error: the message body is not valid JSON")}
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		return nil, &frameError{err: jsonrpc2.NewError(jsonrpc2.InvalidRequest,
			"invalid request: batches are not supported over this connection")}
	}
	msg, err := jsonrpc2.DecodeMessage(body)
	if _, isNote := msg.(*jsonrpc2.Notification); err == nil && isNote && hasNullID(body) {
		// JSON-RPC 2.0 discourages a null id and LSP forbids it; taken for
		// a notification it would never be answered.
		return nil, &frameError{err: jsonrpc2.NewError(jsonrpc2.InvalidRequest,
			"invalid request: id must be an integer or a string, not null")}
	}
	if err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(body, &probe)
		return nil, &frameError{id: wireID(probe.ID), err: jsonrpc2.NewError(jsonrpc2.InvalidRequest,
			"invalid request: not a JSON-RPC 2.0 message (need jsonrpc \"2.0\", a string method and an integer or string id)")}
	}
	return msg, nil
}

// hasNullID tells whether a message body has an "id" member whose value is
// null (a notification has no id member at all).
func hasNullID(body []byte) bool {
	if !bytes.Contains(body, []byte(`"id"`)) {
		return false
	}
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	return json.Unmarshal(body, &probe) == nil && string(probe.ID) == "null"
}

// wireID turns a raw id into a jsonrpc2.ID, or the null id when it is not an
// integer or a string.
func wireID(raw json.RawMessage) jsonrpc2.ID {
	if len(raw) == 0 {
		return jsonrpc2.ID{}
	}
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		return jsonrpc2.NewStringID(str)
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return jsonrpc2.NewNumberID(n)
	}
	return jsonrpc2.ID{}
}

// readHeader reads one header block. It returns the declared length and the
// header size; problem is non-empty when the block was unusable, with length
// -1 when no body length is known. A header line that carries junk before a
// Content-Length field (the remains of an unframed body) is resynchronised
// on that field, the junk skipped.
func (s *lspStream) readHeader() (length int64, headerLen int, problem string, err error) {
	length = -1
	started := false
	for {
		line, tooLong, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && started {
				err = io.ErrUnexpectedEOF
			}
			return 0, 0, "", err
		}
		headerLen += len(line)
		if tooLong {
			started = true
			if problem == "" {
				problem = "invalid message header: a header line is longer than 64 KiB"
			}
			continue
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		if len(trimmed) == 0 {
			if !started {
				// Stray blank lines between frames are tolerated.
				continue
			}
			if problem == "" && length < 0 {
				problem = "invalid message header: no Content-Length field"
			}
			return length, headerLen, problem, nil
		}
		if !started {
			if i := indexFold(trimmed, "content-length:"); i > 0 {
				// The remains of an unframed body (already answered) or
				// stray output: skip to the field and read the frame.
				s.log.Warn("rpc: skipped unframed bytes before a header", "bytes", i)
				trimmed = trimmed[i:]
			}
		}
		started = true
		name, value, ok := bytes.Cut(trimmed, []byte(":"))
		if !ok {
			if problem == "" {
				problem = fmt.Sprintf("invalid message header: line %q is not a \"Name: value\" field", truncate(trimmed, 60))
			}
			continue
		}
		if !bytes.EqualFold(bytes.TrimSpace(name), []byte("content-length")) {
			continue // Content-Type and unknown fields are ignored
		}
		v := bytes.TrimSpace(value)
		n, perr := strconv.ParseInt(string(v), 10, 64)
		if perr != nil || n <= 0 {
			if problem == "" {
				problem = fmt.Sprintf("invalid message header: Content-Length %q is not a positive integer", truncate(v, 40))
			}
			continue
		}
		length = n
	}
}

// readLine reads one line including its terminator. A line longer than
// the read buffer (64 KiB) is consumed without being kept and reported as
// tooLong.
func (s *lspStream) readLine() (line []byte, tooLong bool, err error) {
	line, err = s.in.ReadSlice('\n')
	switch {
	case err == nil:
		return line, false, nil
	case errors.Is(err, bufio.ErrBufferFull):
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = s.in.ReadSlice('\n')
		}
		if err != nil {
			return nil, true, err
		}
		return []byte("\n"), true, nil
	case errors.Is(err, io.EOF) && len(line) > 0:
		return nil, false, io.ErrUnexpectedEOF
	default:
		return nil, false, err
	}
}

// discard skips n body bytes by streaming them through a small buffer.
func (s *lspStream) discard(n int64) error {
	if _, err := io.CopyN(io.Discard, s.in, n); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("rpc: discarding a %d-byte body: %w", n, err)
	}
	return nil
}

// Write frames msg and writes it with one Write call. The write ignores
// cancellation of ctx: a reply to a cancelled request must still reach the
// client. Once a response is written, replied learns its id.
func (s *lspStream) Write(_ context.Context, msg jsonrpc2.Message) (int64, error) {
	const header = "Content-Length: "
	s.wmu.Lock()
	buf := append(s.wbuf[:0], header...)
	// Room for the length and the blank line; the body follows them.
	buf = append(buf, "00000000000000000000\r\n\r\n"...)
	start := len(buf)
	buf = jsonrpc2.AppendMessage(buf, msg)
	body := buf[start:]
	if !utf8.Valid(body) {
		// Encoding/json passes raw JSON (payloads) through as it is: the
		// record's door already made them valid, this is the last guard.
		body = core.ValidJSON(body)
		buf = append(buf[:start], body...)
		body = buf[start:]
	}
	var hb [48]byte
	head := strconv.AppendInt(append(hb[:0], header...), int64(len(body)), 10)
	head = append(head, "\r\n\r\n"...)
	frame := buf[start-len(head):]
	copy(frame, head)
	id, isResponse := responseID(body)
	n, err := s.out.Write(frame)
	s.wbuf = buf
	s.wmu.Unlock()
	if isResponse && s.replied != nil {
		s.replied(id)
	}
	if err != nil && s.failed != nil {
		s.failed(err)
	}
	return int64(n), err
}

// Close releases the transport once.
func (s *lspStream) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		if s.closer != nil {
			s.closeErr = s.closer()
		}
	})
	return s.closeErr
}

// indexFold is bytes.Index ignoring ASCII case; pattern must be lower case.
func indexFold(b []byte, pattern string) int {
	for i := 0; i+len(pattern) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(pattern)], []byte(pattern)) {
			return i
		}
	}
	return -1
}

// truncate shortens b for an error message.
func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// ended is closed when Read meets end of input or a transport failure.
func (s *lspStream) ended() <-chan struct{} { return s.done }

// onReplied sets the function told the id of every response written.
func (s *lspStream) onReplied(f func(jsonrpc2.ID)) { s.replied = f }

// onWriteFailed sets the function told the error of a failed write.
func (s *lspStream) onWriteFailed(f func(error)) { s.failed = f }

package rpctest

// LSP framing: the Content-Length frames a Client reads and writes, read
// strictly.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ProtocolError is a received message that is not JSON-RPC 2.0, or a
// stream that is not LSP frames.
type ProtocolError struct{ Reason string }

func (e *ProtocolError) Error() string { return e.Reason }

// Frame wraps body in an LSP header.
func Frame(body []byte) []byte {
	return append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...)
}

// FrameWriter returns a send function writing LSP frames to w.
func FrameWriter(w io.Writer) func([]byte) error {
	return func(body []byte) error {
		_, err := w.Write(Frame(body))
		return err
	}
}

// ReadFrames reads LSP frames from r strictly (anything that is not a
// Content-Length frame of JSON-RPC 2.0 is a ProtocolError) and delivers
// them until r ends; then it calls End.
func (c *Client) ReadFrames(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		body, err := readFrame(br)
		if err == nil {
			err = c.Deliver(body)
		}
		if err != nil {
			c.End(err)
			return
		}
	}
}

func readFrame(br *bufio.Reader) ([]byte, error) {
	length := -1
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if line != "" {
				return nil, &ProtocolError{fmt.Sprintf("stdout ended inside a header: %q", line)}
			}
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			return nil, &ProtocolError{fmt.Sprintf("stdout carried a non-frame line %q", line)}
		}
		length, err = strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return nil, &ProtocolError{fmt.Sprintf("bad Content-Length %q", value)}
		}
	}
	if length < 0 {
		return nil, &ProtocolError{"frame without Content-Length"}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, err
	}
	return body, nil
}

// ReadMessage reads one LSP frame from br and decodes it strictly: a
// stream that is not frames, or a body that is not JSON-RPC 2.0, is a
// ProtocolError; the end of br is io.EOF.
func ReadMessage(br *bufio.Reader) (Message, error) {
	body, err := readFrame(br)
	if err != nil {
		return Message{}, err
	}
	return decode(body)
}

func decode(body []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return m, &ProtocolError{fmt.Sprintf("the server sent invalid JSON: %v: %s", err, body)}
	}
	if m.JSONRPC != "2.0" {
		return m, &ProtocolError{fmt.Sprintf("message %s lacks jsonrpc 2.0", body)}
	}
	return m, nil
}

package rpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"go.lsp.dev/jsonrpc2"
)

// TestStreamOneByteAtATime reads good and bad frames delivered a byte at a
// time: the good ones come out in order, each bad one is answered.
func TestStreamOneByteAtATime(t *testing.T) {
	input := string(frame([]byte(`{"jsonrpc":"2.0","id":1,"method":"a"}`))) +
		"\r\n" + // a stray blank line between frames is tolerated
		"content-length: 40\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" +
		`{"jsonrpc":"2.0","method":"b","params":1}`[:40] +
		string(frame([]byte(`{"jsonrpc":"2.0","id":2,`))) +
		string(frame([]byte(`{"jsonrpc":"2.0","id":"s","method":"c","params":{"x":[1,2]}}`)))
	var out bytes.Buffer
	s := newLSPStream(iotest.OneByteReader(strings.NewReader(input)), &out, 0, discardLogger(), nil)
	s.Close() // the end of input is returned only once the stream is closed
	var methods []string
	for {
		msg, _, err := s.Read(context.Background())
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("read: %v", err)
			}
			break
		}
		switch m := msg.(type) {
		case *jsonrpc2.Call:
			methods = append(methods, m.Method())
		case *jsonrpc2.Notification:
			methods = append(methods, m.Method())
		}
	}
	if strings.Join(methods, ",") != "a,c" {
		t.Errorf("messages %v, want a,c (b is cut short and invalid)", methods)
	}
	if got := strings.Count(out.String(), `"code":-32700`); got != 2 {
		t.Errorf("want 2 parse-error replies, got:\n%s", out.String())
	}
	if s.failure() != nil {
		t.Errorf("clean end of input reported as %v", s.failure())
	}
}

// TestStreamTruncatedBody reports a body cut short as a transport error.
func TestStreamTruncatedBody(t *testing.T) {
	s := newLSPStream(strings.NewReader("Content-Length: 50\r\n\r\n{\"jsonrpc\""), io.Discard, 0, discardLogger(), nil)
	s.Close()
	if _, _, err := s.Read(context.Background()); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want io.ErrUnexpectedEOF", err)
	}
	if !errors.Is(s.failure(), io.ErrUnexpectedEOF) {
		t.Errorf("failure %v", s.failure())
	}
}

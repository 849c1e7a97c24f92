package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// FuzzFraming feeds arbitrary bytes to the LSP framing reader. It never
// panics and always ends (the input is finite), every message it returns is
// a JSON-RPC message, and everything it writes back (answers to bad frames)
// is a well-formed Content-Length frame holding a JSON-RPC error response.
// The seed corpus is in testdata/fuzz/FuzzFraming; `go test` runs it, and
// `go test -fuzz=FuzzFraming ./rpc` explores further.
func FuzzFraming(f *testing.F) {
	for _, s := range []string{
		"Content-Length: 2\r\n\r\n{}",
		"Content-Length: 52\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"session/list"}` + "  ",
		"Content-Length: 40\r\n\r\n" + `{"jsonrpc":"2.0","id":null,"method":"x"}`,
		"Content-Length: 9999999999\r\n\r\n{",
		"Content-Length: -1\r\n\r\nContent-Length: 2\r\n\r\n[]",
		"content-length:3\nContent-Type: x\n\n{}}",
		"garbage\r\nContent-Length: 2\r\n\r\n{}",
		"\r\n\r\n\r\nContent-Length: 5\r\n\r\n[1,2]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		s := newLSPStream(bytes.NewReader(in), &out, 4096, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
		// Read returns its final error only once the stream is closed
		// (replies still owed are written first); nothing is owed here.
		s.Close()
		for i := 0; ; i++ {
			if i > len(in)+1 {
				t.Fatalf("more messages than input bytes: the reader does not advance")
			}
			msg, _, err := s.Read(context.Background())
			if err != nil {
				break
			}
			if msg == nil {
				t.Fatal("nil message without an error")
			}
		}
		br := bufio.NewReader(&out)
		for {
			m, err := rpctest.ReadMessage(br)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("an answer to a bad frame is not a well-formed frame: %v\n%q", err, out.String())
			}
			if m.JSONRPC != "2.0" || m.Error == nil || m.Method != "" {
				t.Fatalf("an answer to a bad frame is not an error response: %+v", m)
			}
		}
	})
}

// FuzzParams sends fuzzed params to every Bridge method (and to the
// lifecycle requests) of a running server whose backend accepts anything.
// Every request is answered, never with an internal error (-32603) and
// never with an error message longer than 1 KiB; the server keeps serving.
func FuzzParams(f *testing.F) {
	var methods []string
	for _, m := range schema.Methods() {
		if m.Call != nil {
			methods = append(methods, m.Name)
		}
	}
	for i := range methods {
		for _, p := range []string{`{}`, `null`, `[]`, `{"sessionId":"s"}`, `{"sessionId":5}`,
			`{"sessionId":"s","content":[{"type":"text","text":"a"}]}`, `{"harness":"fake","cwd":"/w","path":"/dev/zero"}`,
			`{"sessionId":"s","beforeSeq":-1,"maxMessages":1e300}`, `"x"`, `{"target":{"harness":7}}`} {
			f.Add(uint8(i), []byte(p))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, params []byte) {
		method := methods[int(which)%len(methods)]
		if !json.Valid(params) {
			params, _ = json.Marshal(string(params))
		}
		c := startServer(t, newFake(), nil)
		c.initialize()
		m := c.Call(method, json.RawMessage(params))
		if m.Error != nil {
			if m.Error.Code == int(CodeInternal) {
				t.Fatalf("%s %s: internal error %q", method, params, m.Error.Message)
			}
			if len(m.Error.Message)+len(m.Error.Data) > 1024 {
				t.Fatalf("%s: error of %d bytes", method, len(m.Error.Message)+len(m.Error.Data))
			}
		}
		c.MustCall("session/list", map[string]any{}, nil)
	})
}

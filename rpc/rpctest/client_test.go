package rpctest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// echo is a server over pipes that answers every request with its method
// name as the error message (code -32001 for "session/history", else a
// zero result of the method's result type).
func echo(t *testing.T) *rpctest.Client { return echoFor(t, t) }

// echoFor is echo with the client failing tb instead of t.
func echoFor(t *testing.T, tb testing.TB) *rpctest.Client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	t.Cleanup(func() { inW.Close(); outW.Close() })
	srv := rpctest.NewFramed(t, inR, outW, rpctest.Options{})
	srv.SetOnRequest(func(m rpctest.Message) (any, *rpctest.Error) {
		if m.Method == "session/history" {
			return nil, &rpctest.Error{Code: -32001, Message: m.Method, Data: json.RawMessage(`{"code":"not_found"}`)}
		}
		row, ok := schema.MethodByName(m.Method)
		if !ok {
			return nil, &rpctest.Error{Code: -32601, Message: m.Method}
		}
		return map[string]any{"method": m.Method, "zero": row.Result}, nil
	})
	return rpctest.NewFramed(tb, outR, inW, rpctest.Options{})
}

// TestTypedCallsUseTheirRows: every Backend method of the client sends its
// row's wire name (the server side sees it), and an error reply is an
// *rpctest.Error with the contract's data.
func TestTypedCallsUseTheirRows(t *testing.T) {
	c := echo(t)
	ctx := context.Background()
	n := 0
	for _, row := range schema.Methods() {
		if row.Call == nil {
			continue
		}
		n++
		_, err := row.Call(ctx, c, row.Params)
		if row.Name == "session/history" {
			if e := rpctest.AsError(err); e == nil || e.Code != -32001 || e.DataCode() != "not_found" {
				t.Errorf("session/history: %v, want the error reply", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", row.Name, err)
		}
	}
	var sent []string
	for _, m := range c.Messages() {
		var r struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(m.Result, &r)
		if r.Method != "" {
			sent = append(sent, r.Method)
		}
	}
	var want []string
	for _, row := range schema.Methods() {
		if row.Call != nil && row.Name != "session/history" {
			want = append(want, row.Name)
		}
	}
	if n < 20 || !reflect.DeepEqual(sent, want) {
		t.Errorf("the server saw %v\nwant %v", sent, want)
	}
}

// TestCancelledCallSendsCancelRequest: a call whose context ends sends
// $/cancelRequest with its id and still returns the reply.
func TestCancelledCallSendsCancelRequest(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	t.Cleanup(func() { inW.Close(); outW.Close() })
	srv := rpctest.NewFramed(t, inR, outW, rpctest.Options{})
	srv.SetOnRequest(func(rpctest.Message) (any, *rpctest.Error) { return nil, nil }) // answered below
	c := rpctest.NewFramed(t, outR, inW, rpctest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: "s1"})
		done <- err
	}()
	req := srv.AwaitRequest("session/prompt")
	cancel()
	idOf := func(id schema.RequestID) string { b, _ := json.Marshal(id); return string(b) }
	p := rpctest.Await(srv, schema.NoticeCancelRequest, func(p schema.CancelParams) bool {
		return idOf(p.ID) == string(req.ID)
	})
	if idOf(p.ID) != string(req.ID) {
		t.Fatalf("$/cancelRequest id %s, want %s", idOf(p.ID), req.ID)
	}
	srv.Respond(req.ID, nil, &rpctest.Error{Code: -32800, Message: "session/prompt: request cancelled"})
	if e := rpctest.AsError(<-done); e == nil || e.Code != -32800 {
		t.Fatalf("cancelled call: %v, want its -32800 reply", e)
	}
}

// TestStrictFrames: anything on the stream that is not a frame ends it
// with a ProtocolError, and an await pending fails naming it.
func TestStrictFrames(t *testing.T) {
	r, w := io.Pipe()
	ft := &fakeT{TB: t}
	c := rpctest.NewFramed(ft, r, io.Discard, rpctest.Options{})
	go func() { io.WriteString(w, "hello from a stray print\n"); w.Close() }()
	<-c.Done()
	var pe *rpctest.ProtocolError
	if err := c.EndErr(); err == nil || !strings.Contains(err.Error(), "non-frame line") || !asProtocol(err, &pe) {
		t.Fatalf("EndErr = %v, want a ProtocolError naming the line", err)
	}
}

func asProtocol(err error, pe **rpctest.ProtocolError) bool {
	p, ok := err.(*rpctest.ProtocolError)
	*pe = p
	return ok
}

// fakeT swallows the cleanup's report of the broken protocol (the test
// checks it itself).
type fakeT struct{ testing.TB }

func (f *fakeT) Errorf(string, ...any) {}

// TestRepliesAreTakenOnce: two replies with the same id (null: answers to
// messages without a readable id) are returned by two Reply calls in
// turn, as a client reads them.
func TestRepliesAreTakenOnce(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	t.Cleanup(func() { inW.Close(); outW.Close() })
	srv := rpctest.NewFramed(t, inR, outW, rpctest.Options{})
	c := rpctest.NewFramed(t, outR, inW, rpctest.Options{})
	for _, msg := range []string{"first", "second"} {
		if err := srv.WriteBody([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"` + msg + `"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if m := c.Reply("null"); m.Error == nil || m.Error.Message != "first" {
		t.Fatalf("first Reply: %+v", m.Error)
	}
	if m := c.Reply("null"); m.Error == nil || m.Error.Message != "second" {
		t.Fatalf("second Reply: %+v, want the second reply", m.Error)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message (and
// does not stop the goroutine).
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}

// TestMustNamesTheMethod: Must returns a typed call's result, and an error
// reply fails the test with the method's wire name and the error.
func TestMustNamesTheMethod(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	c := echoFor(t, rec)
	rpctest.Must(c, c.SessionHistory, schema.SessionHistoryParams{SessionID: "s1"})
	if !strings.HasPrefix(rec.fatal, "session/history: ") || !strings.Contains(rec.fatal, "-32001") {
		t.Fatalf("Must on an error reply failed with %q, want the method and the error", rec.fatal)
	}
	if rec.fatal = ""; rpctest.Must(c, c.SessionList, schema.SessionListParams{}).Items != nil || rec.fatal != "" {
		t.Fatalf("Must on a reply failed with %q", rec.fatal)
	}
}

// TestErrorOf: ErrorOf is nil for a result, the error reply for one.
func TestErrorOf(t *testing.T) {
	c := echo(t)
	if e := rpctest.ErrorOf(c.SessionList(t.Context(), schema.SessionListParams{})); e != nil {
		t.Fatalf("session/list: %v, want no error", e)
	}
	if e := rpctest.ErrorOf(c.SessionHistory(t.Context(), schema.SessionHistoryParams{SessionID: "s1"})); e == nil || e.Code != -32001 || e.DataCode() != "not_found" {
		t.Fatalf("session/history: %v, want the error reply", e)
	}
}

// TestParamsAs: a request's params decode as the contract's type; params of
// the wrong shape are an error naming the method.
func TestParamsAs(t *testing.T) {
	m := rpctest.Message{Method: "session/requestPermission", Params: json.RawMessage(`{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[]}`)}
	p, err := rpctest.ParamsAs[schema.SessionRequestPermissionParams](m)
	if err != nil || p.SessionID != "s1" || p.ToolCall.ToolCallID != "t1" {
		t.Fatalf("ParamsAs = %+v, %v", p, err)
	}
	m.Params = json.RawMessage(`{"sessionId":12}`)
	if _, err := rpctest.ParamsAs[schema.SessionRequestPermissionParams](m); err == nil || !strings.Contains(err.Error(), "session/requestPermission") {
		t.Fatalf("ParamsAs of bad params: %v, want an error naming the method", err)
	}
}

package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// drained waits until the server's output has ended and returns every
// message it sent.
func (c *client) drained() []wireMsg {
	c.t.Helper()
	<-c.Done()
	return c.Messages()
}

// replyIndex is the position of the reply to id in msgs, or -1.
func replyIndex(msgs []wireMsg, id int) int {
	want := []byte(fmt.Sprint(id))
	for i, m := range msgs {
		if m.Method == "" && bytes.Equal(m.ID, want) {
			return i
		}
	}
	return -1
}

// TestShutdownReplyNeverOvertakes sends a request, shutdown and exit back to
// back (one write, and every other time the end of input right after) 200
// times: the request's reply is never lost and always comes before
// shutdown's, and the exit code is 0.
func TestShutdownReplyNeverOvertakes(t *testing.T) {
	for run := range 200 {
		fake := newFake()
		fake.list = func(ctx context.Context, _ schema.SessionListParams) (schema.SessionListResult, error) {
			// Vary how far the request gets before shutdown is read.
			for range run % 7 {
				runtime.Gosched()
			}
			return schema.SessionListResult{Items: []schema.SessionListItem{{SessionID: "s9"}}}, nil
		}
		c := startServer(t, fake, nil)
		c.initialize()
		req, shut := c.NextID(), c.NextID()
		var batch []byte
		for _, m := range []map[string]any{
			{"jsonrpc": "2.0", "id": req, "method": "session/list", "params": map[string]any{}},
			{"jsonrpc": "2.0", "id": shut, "method": "shutdown"},
			{"jsonrpc": "2.0", "method": "exit"},
		} {
			b, _ := json.Marshal(m)
			batch = append(batch, frame(b)...)
		}
		c.sendRaw(batch)
		if run%2 == 1 {
			c.w.Close() // and the input ends at once (a client that writes and closes)
		}
		if r := c.waitExit(); r.code != 0 || r.err != nil {
			t.Fatalf("run %d: exit code %d err %v, want 0 nil", run, r.code, r.err)
		}
		msgs := c.drained()
		ri, si := replyIndex(msgs, req), replyIndex(msgs, shut)
		if ri < 0 || si < 0 {
			t.Fatalf("run %d: reply lost (request at %d, shutdown at %d) in %d messages", run, ri, si, len(msgs))
		}
		if ri > si {
			t.Fatalf("run %d: the shutdown reply overtook the request's reply", run)
		}
		if msgs[ri].Error != nil || !bytes.Contains(msgs[ri].Result, []byte(`"s9"`)) {
			t.Fatalf("run %d: request reply %+v", run, msgs[ri])
		}
	}
}

// TestImmediateExitKeepsEarlierReply sends a request then exit (no
// shutdown) in one write: the request is still answered before the process
// ends, and the exit code is 1.
func TestImmediateExitKeepsEarlierReply(t *testing.T) {
	for run := range 50 {
		fake := newFake()
		c := startServer(t, fake, nil)
		c.initialize()
		req := c.NextID()
		var batch []byte
		for _, m := range []map[string]any{
			{"jsonrpc": "2.0", "id": req, "method": "session/list", "params": map[string]any{}},
			{"jsonrpc": "2.0", "method": "exit"},
		} {
			b, _ := json.Marshal(m)
			batch = append(batch, frame(b)...)
		}
		c.sendRaw(batch)
		if run%2 == 1 {
			c.w.Close()
		}
		if r := c.waitExit(); r.code != 1 {
			t.Fatalf("run %d: exit code %d, want 1 (no shutdown)", run, r.code)
		}
		if replyIndex(c.drained(), req) < 0 {
			t.Fatalf("run %d: the request's reply was lost", run)
		}
	}
}

// TestStopTakesTheShutdownPath ends Serve's context (what a SIGTERM does):
// the backend is closed as by shutdown, the running prompt is answered, and
// Serve returns 0 with no error.
func TestStopTakesTheShutdownPath(t *testing.T) {
	fake := newFake()
	started := make(chan struct{})
	fake.prompt = func(ctx context.Context, _ schema.SessionPromptParams) (schema.SessionPromptResult, error) {
		close(started)
		select {
		case <-ctx.Done():
		case <-fake.closed:
		}
		return schema.SessionPromptResult{}, core.Errorf(core.CodeUnavailable, "the session was closed")
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c := newClient(t, fake, &syncBuffer{}, outR, inW)
	go func() {
		code, err := Serve(ctx, inR, outW, Config{Version: "test", Logger: discardLogger(),
			Open: func(context.Context, InitOptions, peer.Notifier, Caller) (Backend, error) { return fake, nil }})
		outW.Close()
		c.exit <- serveResult{code, err}
	}()
	defer inW.Close()
	c.initialize()
	slow := c.NextID()
	c.Send(slow, "session/prompt", map[string]any{"sessionId": "s1", "content": []any{map[string]any{"type": "text", "text": "x"}}})
	<-started
	stop()
	if r := c.waitExit(); r.code != 0 || r.err != nil {
		t.Fatalf("Serve after its context ended: code %d err %v, want 0 nil", r.code, r.err)
	}
	select {
	case <-fake.closed:
	default:
		t.Fatal("the backend was not closed")
	}
	if i := replyIndex(c.drained(), slow); i < 0 {
		t.Fatal("the running prompt was not answered")
	}
}

// TestEndOfInputKeepsReplies: a client that writes requests and closes its
// end (bridge < requests) still gets every reply.
func TestEndOfInputKeepsReplies(t *testing.T) {
	fake := newFake()
	c := startServer(t, fake, nil)
	c.initialize()
	var batch []byte
	var ids []int
	for range 5 {
		id := c.NextID()
		ids = append(ids, id)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/list", "params": map[string]any{}})
		batch = append(batch, frame(b)...)
	}
	c.sendRaw(batch)
	c.w.Close()
	if r := c.waitExit(); r.code != 1 || r.err != nil {
		t.Fatalf("end of input before shutdown: code %d err %v, want 1 nil", r.code, r.err)
	}
	msgs := c.drained()
	for _, id := range ids {
		if replyIndex(msgs, id) < 0 {
			t.Fatalf("the reply to %d was lost", id)
		}
	}
}

package ndjson_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/adapters/internal/ndjson"
)

// recorder is a Handler that records what it is given and answers
// requests with their params.
type recorder struct {
	c         *ndjson.Conn
	mu        sync.Mutex
	notes     []string
	malformed []string
}

func (r *recorder) Notification(method string, _ json.RawMessage, _ []byte) {
	r.mu.Lock()
	r.notes = append(r.notes, method)
	r.mu.Unlock()
}

func (r *recorder) Request(id json.RawMessage, method string, params json.RawMessage, _ []byte) {
	if method == "fail" {
		_ = r.c.ReplyError(id, &ndjson.Error{Code: -32601, Message: "no"})
		return
	}
	_ = r.c.Reply(id, params)
}

func (r *recorder) Malformed(raw []byte, _ error) {
	r.mu.Lock()
	r.malformed = append(r.malformed, string(raw))
	r.mu.Unlock()
}

// peer is the other end: it reads what the Conn writes and writes lines
// the Conn reads.
type peer struct {
	in  *bufio.Scanner // what the Conn wrote
	out *io.PipeWriter // what the Conn reads
}

func (p *peer) next(t *testing.T) map[string]any {
	t.Helper()
	if !p.in.Scan() {
		t.Fatal("the connection wrote nothing more")
	}
	var m map[string]any
	if err := json.Unmarshal(p.in.Bytes(), &m); err != nil {
		t.Fatalf("%s: %v", p.in.Bytes(), err)
	}
	return m
}

func (p *peer) send(line string) { _, _ = io.WriteString(p.out, line+"\n") }

func start(t *testing.T, version2 bool) (*ndjson.Conn, *recorder, *peer, chan error) {
	connR, peerW := io.Pipe()
	peerR, connW := io.Pipe()
	rec := &recorder{}
	c := ndjson.New(connW, rec, ndjson.Options{Name: "test peer", Version2: version2})
	rec.c = c
	served := make(chan error, 1)
	go func() { served <- c.Serve(connR) }()
	t.Cleanup(func() { peerW.Close(); connW.Close() })
	return c, rec, &peer{in: bufio.NewScanner(peerR), out: peerW}, served
}

func TestCallsBothWays(t *testing.T) {
	for _, v2 := range []bool{true, false} {
		c, rec, p, _ := start(t, v2)
		ctx := context.Background()
		res := make(chan json.RawMessage, 1)
		go func() {
			r, err := c.Call(ctx, "ping", map[string]int{"n": 1})
			if err != nil {
				t.Error(err)
			}
			res <- r
		}()
		m := p.next(t)
		if m["method"] != "ping" || m["id"] == nil || (m["jsonrpc"] == "2.0") != v2 {
			t.Fatalf("request %v (version2 %v)", m, v2)
		}
		// A notification sent before the response is handled before it.
		p.send(`{"method":"tick"}`)
		// The id comes back as a string: still matched.
		p.send(`{"id":"` + jsonNumber(m["id"]) + `","result":{"ok":true}}`)
		if got := <-res; string(got) != `{"ok":true}` {
			t.Fatalf("result %s", got)
		}
		rec.mu.Lock()
		if len(rec.notes) != 1 || rec.notes[0] != "tick" {
			t.Fatalf("notes %v", rec.notes)
		}
		rec.mu.Unlock()
		// The peer calls us; we answer with its params, or an error.
		p.send(`{"id":41,"method":"echo","params":{"x":2}}`)
		if m := p.next(t); m["id"] != float64(41) || m["result"].(map[string]any)["x"] != float64(2) {
			t.Fatalf("reply %v", m)
		}
		p.send(`{"id":42,"method":"fail"}`)
		if m := p.next(t); m["error"].(map[string]any)["code"] != float64(-32601) {
			t.Fatalf("error reply %v", m)
		}
		// An error response comes back as *Error.
		go func() {
			_, err := c.Call(ctx, "bad", nil)
			var e *ndjson.Error
			if !errors.As(err, &e) || e.Code != 7 {
				t.Errorf("Call error %v", err)
			}
			res <- nil
		}()
		m = p.next(t)
		p.send(`{"id":` + jsonNumber(m["id"]) + `,"error":{"code":7,"message":"nope"}}`)
		<-res
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

func TestAbandonedAndUnknownResponses(t *testing.T) {
	c, rec, p, _ := start(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Call(ctx, "slow", nil); done <- err }()
	m := p.next(t)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned call: %v", err)
	}
	// The late response of an abandoned call is dropped quietly; one for an
	// id never sent is reported; so is a line that is not JSON-RPC.
	p.send(`{"id":` + jsonNumber(m["id"]) + `,"result":1}`)
	p.send(`{"id":999,"result":1}`)
	p.send(`not json`)
	p.send(`{"x":1}`)
	// A round trip makes sure the reader handled the lines above.
	go func() { _, _ = c.Call(context.Background(), "sync", nil) }()
	m = p.next(t)
	p.send(`{"id":` + jsonNumber(m["id"]) + `,"result":null}`)
	p.send(`{"method":"flush"}`)
	for {
		rec.mu.Lock()
		n := len(rec.notes)
		rec.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.malformed) != 3 || !strings.Contains(rec.malformed[0], "999") {
		t.Fatalf("malformed %q, want the unknown id, the non-JSON line and the non-message", rec.malformed)
	}
}

func TestCloseFailsPendingCalls(t *testing.T) {
	c, _, p, served := start(t, false)
	errc := make(chan error, 1)
	go func() { _, err := c.Call(context.Background(), "never", nil); errc <- err }()
	p.next(t)
	p.out.Close() // the peer's output ends
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "test peer connection closed") {
		t.Fatalf("pending call after the end of output: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve at the end of output: %v", err)
	}
	if _, err := c.Call(context.Background(), "late", nil); err == nil {
		t.Fatal("a call on a closed connection succeeded")
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done is not closed")
	}
}

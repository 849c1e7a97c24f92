package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// pipeRWC joins one end of two io.Pipes into a ReadWriteCloser.
type pipeRWC struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (p pipeRWC) Close() error {
	for _, c := range p.closers {
		c.Close()
	}
	return nil
}

// pipePair returns the client's and the server's ends of a duplex pipe.
func pipePair() (client, server pipeRWC) {
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	return pipeRWC{Reader: s2cR, Writer: c2sW, closers: []io.Closer{s2cR, c2sW}},
		pipeRWC{Reader: c2sR, Writer: s2cW, closers: []io.Closer{c2sR, s2cW}}
}

// page is a 60-entry history page with realistic payloads.
func page() []core.Entry {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	out := make([]core.Entry, 60)
	for i := range out {
		kind := core.KindUserMessage
		if i%2 == 1 {
			kind = core.KindAssistantMessage
		}
		out[i] = core.Entry{ID: fmt.Sprintf("01JNK%021d", i), SessionID: "01JNKSESSION0000000000000", ParentID: fmt.Sprintf("01JNK%021d", i-1),
			Seq: int64(i + 1), Kind: kind, CreatedAt: at.Add(time.Duration(i) * time.Second),
			Payload: core.Payload(map[string]string{"text": fmt.Sprintf("message %d: the tests in rpc pass and the handoff names the next step", i)})}
	}
	return out
}

var historyParams = json.RawMessage(`{"sessionId":"01JNKSESSION0000000000000","maxMessages":60}`)

// benchBridgeHistory measures session/history through Serve: framing,
// lifecycle gate, release, params decoding, the backend call, conversion
// to the schema types and encoding.
func benchBridgeHistory(b *testing.B) {
	entries := page()
	fake := newFake()
	wire := make([]schema.Entry, len(entries))
	for i, e := range entries {
		wire[i] = peer.WireEntry(e)
	}
	fake.history = func(context.Context, schema.SessionHistoryParams) (schema.SessionHistoryResult, error) {
		return schema.SessionHistoryResult{Entries: wire, HasMore: true}, nil
	}
	cli, srv := pipePair()
	cfg := Config{Logger: discardLogger(), Open: func(context.Context, InitOptions, peer.Notifier, Caller) (Backend, error) { return fake, nil }}
	done := make(chan struct{})
	go func() {
		Serve(context.Background(), srv, srv, cfg)
		srv.Close()
		close(done)
	}()
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(cli))
	conn.Go(context.Background(), jsonrpc2.MethodNotFoundHandler)
	ctx := context.Background()
	if _, err := conn.Call(ctx, "initialize", json.RawMessage(`{"capabilities":{}}`), nil); err != nil {
		b.Fatal(err)
	}
	var res jsonrpc2.RawMessage
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := conn.Call(ctx, "session/history", jsonrpc2.RawMessage(historyParams), &res); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if len(res) < 60*200 {
		b.Fatalf("short result: %d bytes", len(res))
	}
	conn.Notify(ctx, "exit", nil)
	<-done
	cli.Close()
}

// rawServer runs a bare jsonrpc2 server with handler over a pipe and
// returns a client connection to it.
func rawServer(b *testing.B, handler jsonrpc2.Handler) (jsonrpc2.Conn, func()) {
	cli, srv := pipePair()
	sconn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(srv))
	sconn.Go(context.Background(), handler)
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(cli))
	conn.Go(context.Background(), jsonrpc2.MethodNotFoundHandler)
	return conn, func() { cli.Close(); srv.Close() }
}

// benchRawEcho measures a bare jsonrpc2 echo of the same request over the
// same pipe and framing: the transport's floor.
func benchRawEcho(b *testing.B) {
	conn, stop := rawServer(b, func(_ context.Context, req *jsonrpc2.Request) (any, error) {
		return append(jsonrpc2.RawMessage(nil), req.Params()...), nil
	})
	defer stop()
	var res jsonrpc2.RawMessage
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := conn.Call(context.Background(), "echo", jsonrpc2.RawMessage(historyParams), &res); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRawPage measures a bare jsonrpc2 server answering the same request
// with the same 60 entries, encoded with encoding/json: the floor for a
// server that has to send this page at all.
func benchRawPage(b *testing.B) {
	entries := page()
	conn, stop := rawServer(b, func(_ context.Context, req *jsonrpc2.Request) (any, error) {
		out, err := json.Marshal(map[string]any{"entries": entries, "hasMore": true})
		return jsonrpc2.RawMessage(out), err
	})
	defer stop()
	var res jsonrpc2.RawMessage
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := conn.Call(context.Background(), "history", jsonrpc2.RawMessage(historyParams), &res); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBridgeHistory(b *testing.B) { benchBridgeHistory(b) }
func BenchmarkRawEcho(b *testing.B)       { benchRawEcho(b) }
func BenchmarkRawPage(b *testing.B)       { benchRawPage(b) }

// BenchmarkHistoryVsEcho runs the three in one process and reports, in its
// "ratio" sub-benchmark, Bridge's throughput as a fraction of each
// baseline's (goal: at least 0.6 of the raw call carrying the same page).
func BenchmarkHistoryVsEcho(b *testing.B) {
	var nsPerOp [3]float64
	for i, bm := range []struct {
		name string
		fn   func(*testing.B)
	}{{"bridge", benchBridgeHistory}, {"echo", benchRawEcho}, {"rawpage", benchRawPage}} {
		b.Run(bm.name, func(b *testing.B) {
			bm.fn(b)
			nsPerOp[i] = float64(b.Elapsed()) / float64(b.N)
		})
	}
	b.Run("ratio", func(b *testing.B) {
		for range b.N {
		}
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(nsPerOp[1]/nsPerOp[0], "bridge/echo")
		b.ReportMetric(nsPerOp[2]/nsPerOp[0], "bridge/rawpage")
	})
}

// BenchmarkParamsDecode measures decoding one session/prompt's params:
// "validated" is what the server does (JSON Schema validation, then
// encoding/json), "plain" is encoding/json alone, the baseline.
func BenchmarkParamsDecode(b *testing.B) {
	raw := json.RawMessage(`{"sessionId":"01JNKSESSION0000000000000","workDoneToken":"t1","content":[{"type":"text","text":"explain the failing test in rpc and propose a fix"},{"type":"image","mediaType":"image/png","data":"iVBORw0KGgo="}]}`)
	b.Run("validated", func(b *testing.B) {
		for range b.N {
			if _, err := decodeParams[schema.SessionPromptParams]("session/prompt", raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		for range b.N {
			var p schema.SessionPromptParams
			if err := json.Unmarshal(raw, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFrameWrite compares writing one framed message with the
// server's stream (which also notes the id of each response, for reply
// ordering) against jsonrpc2's own header stream, the baseline: a response
// carrying a history page, and a small notification.
func BenchmarkFrameWrite(b *testing.B) {
	pageJSON, err := json.Marshal(page())
	if err != nil {
		b.Fatal(err)
	}
	msgs := []struct {
		name string
		msg  jsonrpc2.Message
	}{
		{"page", jsonrpc2.NewResponse(jsonrpc2.NewNumberID(42), pageJSON, nil)},
		{"note", jsonrpc2.NewNotification("session/update", jsonrpc2.RawMessage(`{"sessionId":"01JNKSESSION0000000000000","entry":{"kind":"assistant.delta","payload":{"text":"ok"}}}`))},
	}
	for _, m := range msgs {
		b.Run(m.name+"/bridge", func(b *testing.B) {
			s := newLSPStream(nil, io.Discard, 0, discardLogger(), nil)
			s.replied = func(jsonrpc2.ID) {}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Write(ctx, m.msg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(m.name+"/jsonrpc2", func(b *testing.B) {
			s := jsonrpc2.NewHeaderStream(discardRWC{})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Write(ctx, m.msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// discardRWC is an io.ReadWriteCloser that drops what is written.
type discardRWC struct{}

func (discardRWC) Read([]byte) (int, error)    { return 0, io.EOF }
func (discardRWC) Write(p []byte) (int, error) { return len(p), nil }
func (discardRWC) Close() error                { return nil }

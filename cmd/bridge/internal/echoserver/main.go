// Command echoserver is a benchmark baseline: a raw go.lsp.dev/jsonrpc2
// server over stdio, in the same LSP framing as Bridge, that answers every
// request with its params. BenchmarkHistoryAcrossProcesses compares a
// session/history page from `bridge serve` against an echo of the same size.
package main

import (
	"context"
	"encoding/json"
	"io"
	"os"

	"go.lsp.dev/jsonrpc2"
)

type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error { return nil }

func main() {
	ctx := context.Background()
	conn := jsonrpc2.NewConn(jsonrpc2.NewStream(stdio{os.Stdin, os.Stdout}))
	conn.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if req.Method() == "exit" {
			os.Exit(0)
		}
		return json.RawMessage(req.Params()), nil
	})
	<-conn.Done()
}

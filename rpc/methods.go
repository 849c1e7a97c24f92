package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// method is one Bridge request the server dispatches to the backend: a row
// of schema.Methods with a Call, and how to decode its params.
type method struct {
	schema.Method
	params reflect.Type // the row's params type
}

// methodTable holds every Bridge request the server answers besides the
// lifecycle ones: the rows of schema.Methods that have a Call.
// It is built on first use (the first request), not before main.
var methodTable = sync.OnceValue(func() map[string]*method {
	out := map[string]*method{}
	for _, m := range schema.Methods() {
		if m.Call != nil {
			out[m.Name] = &method{Method: m, params: reflect.TypeOf(m.Params)}
		}
	}
	return out
})

// decode decodes raw into a value of the row's params type (not a pointer).
func (m *method) decode(raw json.RawMessage) (any, error) {
	p := reflect.New(m.params)
	if err := decodeInto(m.Name, raw, p.Interface()); err != nil {
		return nil, err
	}
	return p.Elem().Interface(), nil
}

// callBackend calls a row's Backend method; a variable so that a test can
// see the params every row hands on without a Backend implementing them.
var callBackend = func(ctx context.Context, m *method, b Backend, p any) (any, error) { return m.Call(ctx, b, p) }

// lifecycleMethods are the requests the server answers itself.
var lifecycleMethods = []string{"initialize", "shutdown"}

// served lists every request the server answers, sorted.
func served() []string {
	out := append([]string(nil), lifecycleMethods...)
	for name := range methodTable() {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// run decodes params, reports progress when asked, calls the backend and
// maps its outcome to the wire.
func (s *server) run(ctx context.Context, m *method, b Backend, raw json.RawMessage) (res any, err error) {
	defer func() {
		// A panicking backend fails its request, not the connection; the
		// stack goes to the log only.
		if r := recover(); r != nil {
			s.log.Error("rpc: handler panicked", "method", m.Name, "panic", r, "stack", string(debug.Stack()))
			res, err = nil, toWire(s.log, m.Name, fmt.Errorf("panic: %v", r))
		}
	}()
	p, err := m.decode(raw)
	if err != nil {
		return nil, err
	}
	var prog *progress
	if m.Progress != "" {
		var wp schema.WorkDoneProgressParams
		if json.Unmarshal(raw, &wp) == nil && wp.WorkDoneToken != nil {
			var untrack func()
			ctx, untrack = s.trackProgress(ctx, *wp.WorkDoneToken)
			defer untrack()
			prog = s.beginProgress(*wp.WorkDoneToken, m.Progress)
			ctx = peer.WithProgress(ctx, prog.report)
		}
	}
	res, err = callBackend(ctx, m, b, p)
	if prog != nil {
		if err != nil && ctx.Err() != nil {
			// Cancelled, whatever the backend made of it: the reply is
			// -32800 too.
			prog.end(context.Canceled)
		} else {
			prog.end(err)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, cancelledError(m.Name)
		}
		return nil, toWire(s.log, m.Name, err)
	}
	var out []byte
	if h, ok := res.(schema.SessionHistoryResult); ok {
		out, err = appendHistory(make([]byte, 0, historySize(h)), h)
	} else {
		out, err = json.Marshal(res)
	}
	if err != nil {
		return nil, toWire(s.log, m.Name, err)
	}
	return jsonrpc2.RawMessage(out), nil
}

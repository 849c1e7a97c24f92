package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// EventReceiver is an optional interface of a Backend. A backend that
// implements it receives the host/event notifications a session-hosting
// client sends, in wire order, on the connection's read loop: HostEvent must
// not block for long. params is the notification's params, owned by the
// callee.
type EventReceiver interface {
	HostEvent(ctx context.Context, params json.RawMessage)
}

var _ peer.Notifier = (*server)(nil)

// send sends notification n with params p, the contract's type bound to
// its name (schema.Notice): every notification the server sends goes
// through here. Failures (the client is gone) are logged.
func send[P any](s *server, n schema.Notice[P], p P) {
	raw, err := json.Marshal(p)
	if err != nil {
		s.log.Error("rpc: encoding a notification", "method", n.Name, "error", err)
		return
	}
	if err := s.conn.Notify(context.WithoutCancel(s.life), n.Name, jsonrpc2.RawMessage(raw)); err != nil {
		s.log.Debug("rpc: notification not sent", "method", n.Name, "error", err)
	}
}

// EntryAppended sends session/update.
func (s *server) EntryAppended(e core.Entry) {
	send(s, schema.NoticeSessionUpdate, schema.SessionUpdateNotification{SessionID: e.SessionID, Entry: peer.WireEntry(e)})
}

// ContextCompacted sends session/contextCompacted.
func (s *server) ContextCompacted(n peer.ContextCompacted) { send(s, schema.NoticeContextCompacted, n) }

// CheckpointSaved sends session/checkpointSaved.
func (s *server) CheckpointSaved(n peer.CheckpointSaved) { send(s, schema.NoticeCheckpointSaved, n) }

// Restored sends session/restored.
func (s *server) Restored(n peer.Restored) { send(s, schema.NoticeRestored, n) }

// Log sends window/logMessage (1 error, 2 warning, 3 info, 4 log).
func (s *server) Log(level int, msg string) {
	if level < 1 || level > 4 {
		level = 4
	}
	send(s, schema.NoticeLogMessage, schema.LogMessageParams{Type: schema.MessageType(level), Message: msg})
}

// progress is one work-done progress stream for a client-given token.
type progress struct {
	s     *server
	token schema.ProgressToken
	mu    sync.Mutex
	ended bool
	last  int
}

// beginProgress sends the begin report for token.
func (s *server) beginProgress(token schema.ProgressToken, title string) *progress {
	cancellable := true
	send(s, schema.NoticeProgress, schema.ProgressParams{Token: token,
		Value: schema.WorkDoneProgress{Kind: schema.ProgressBegin, Title: title, Cancellable: &cancellable}})
	return &progress{s: s, token: token, last: -1}
}

// report sends a report; it is a peer.Progress. Reports after end are
// dropped, and the percentage never goes backwards.
func (p *progress) report(done, total int64, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	v := schema.WorkDoneProgress{Kind: schema.ProgressReport, Message: msg}
	if total > 0 {
		pct := int(min(max(done*100/total, 0), 100))
		pct = max(pct, p.last)
		p.last = pct
		v.Percentage = &pct
	}
	send(p.s, schema.NoticeProgress, schema.ProgressParams{Token: p.token, Value: v})
}

// end sends the end report once.
func (p *progress) end(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	msg := "done"
	if err != nil {
		msg = "failed"
		if core.ErrorCode(err) == core.CodeCancelled || errors.Is(err, context.Canceled) {
			msg = "cancelled"
		}
	}
	send(p.s, schema.NoticeProgress, schema.ProgressParams{Token: p.token, Value: schema.WorkDoneProgress{Kind: schema.ProgressEnd, Message: msg}})
}

// clientCaller calls the client back over the same connection.
type clientCaller struct{ s *server }

var _ Caller = clientCaller{}

// errInputEnded is why a call to the client stopped waiting: the client's
// input ended, so its reply can never arrive.
var errInputEnded = errors.New("the client closed its input")

// Call implements Caller. It must be called from a released handler or
// another goroutine, never from the read loop (initialize, Open, HostEvent).
// A call made once the client's input has ended, or waiting when it ends,
// fails at once (CodeUnavailable) instead of waiting for its context: the
// shutdown checkpoint of a session the client hosts runs after the client
// has gone, under a context that only its bound ends.
func (c clientCaller) Call(parent context.Context, method string, params, result any) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	if c.s.inputEnded != nil {
		go func() {
			select {
			case <-c.s.inputEnded:
				cancel(errInputEnded)
			case <-ctx.Done():
			}
		}()
	}
	var raw jsonrpc2.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return core.E(core.CodeInternal, fmt.Sprintf("%s: encoding params", method), err)
		}
		raw = b
	}
	var out jsonrpc2.RawMessage
	id, err := c.s.conn.Call(ctx, method, raw, &out)
	if err != nil {
		if parent.Err() == nil && errors.Is(context.Cause(ctx), errInputEnded) {
			return core.E(core.CodeUnavailable, method+": the client is unreachable", errInputEnded)
		}
		if ctx.Err() != nil {
			if id.IsValid() {
				send(c.s, schema.NoticeCancelRequest, cancelParams(id))
			}
			return core.E(core.CodeCancelled, method+": cancelled", errors.Join(core.ErrCancelled, ctx.Err()))
		}
		var we *jsonrpc2.Error
		if errors.As(err, &we) {
			if we.Code == CodeCancelled {
				return core.E(core.CodeCancelled, fmt.Sprintf("%s: the client cancelled: %s", method, we.Message), core.ErrCancelled)
			}
			return core.E(core.CodeHarness, fmt.Sprintf("%s: the client answered %d %s", method, we.Code, we.Message), we)
		}
		return core.E(core.CodeUnavailable, method+": the client is unreachable", err)
	}
	if result != nil && len(out) > 0 {
		if err := json.Unmarshal(out, result); err != nil {
			return core.E(core.CodeHarness, fmt.Sprintf("%s: the client's result does not decode", method), err)
		}
	}
	return nil
}

// cancelParams builds $/cancelRequest params for id.
func cancelParams(id jsonrpc2.ID) schema.CancelParams {
	if n, ok := id.Number(); ok {
		return schema.CancelParams{ID: schema.NumberID(n)}
	}
	str, _ := id.StringValue()
	return schema.CancelParams{ID: schema.StringID(str)}
}

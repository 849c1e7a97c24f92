package rpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// replies tracks the client's requests whose response has not been written
// yet, so that shutdown answers only after every earlier request was
// answered, and exit (or a signal) ends the process only once every reply it
// owes is on the wire.
type replies struct {
	mu      sync.Mutex
	open    map[jsonrpc2.ID]struct{}
	changed chan struct{} // closed and replaced on every change
	// failed is the error of a write to the client, once one failed: no
	// reply still open will ever be written, so nobody waits for them.
	failed error
}

func newReplies() *replies {
	return &replies{open: map[jsonrpc2.ID]struct{}{}, changed: make(chan struct{})}
}

// add records that request id awaits a reply. It runs on the read loop, in
// wire order.
func (r *replies) add(id jsonrpc2.ID) {
	if !id.IsValid() {
		return
	}
	r.mu.Lock()
	r.open[id] = struct{}{}
	r.mu.Unlock()
}

// done records that the reply to id was written.
func (r *replies) done(id jsonrpc2.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.open[id]; !ok {
		return
	}
	delete(r.open, id)
	close(r.changed)
	r.changed = make(chan struct{})
}

// writeFailed records that a write to the client failed: the replies
// still owed can no longer be written, and every wait for them ends now.
func (r *replies) writeFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed != nil || err == nil {
		return
	}
	r.failed = err
	close(r.changed)
	r.changed = make(chan struct{})
}

// writeFailure is the error writeFailed recorded, nil while writes work.
func (r *replies) writeFailure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// isOpen reports whether request id still awaits its reply.
func (r *replies) isOpen(id jsonrpc2.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.open[id]
	return ok
}

// pending returns the requests awaiting a reply, except one.
func (r *replies) pending(except jsonrpc2.ID) []jsonrpc2.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]jsonrpc2.ID, 0, len(r.open))
	for id := range r.open {
		if id != except {
			out = append(out, id)
		}
	}
	return out
}

// wait waits until none of ids awaits a reply (every pending request when
// all is true), or until d has passed, or a write failed; it reports
// whether they all did.
func (r *replies) wait(ids []jsonrpc2.ID, all bool, d time.Duration) bool {
	giveUp := make(chan struct{})
	t := time.AfterFunc(d, func() { close(giveUp) })
	defer t.Stop()
	return r.until(ids, all, giveUp)
}

// waitUntil waits until none of ids awaits a reply, or until giveUp is
// closed or a write failed; it reports whether they all did.
func (r *replies) waitUntil(ids []jsonrpc2.ID, giveUp <-chan struct{}) bool {
	return r.until(ids, false, giveUp)
}

func (r *replies) until(ids []jsonrpc2.ID, all bool, giveUp <-chan struct{}) bool {
	for {
		r.mu.Lock()
		left := false
		if all {
			left = len(r.open) > 0
		}
		for _, id := range ids {
			if _, ok := r.open[id]; ok {
				left = true
				break
			}
		}
		ch, failed := r.changed, r.failed != nil
		r.mu.Unlock()
		if !left {
			return true
		}
		if failed {
			return false
		}
		select {
		case <-ch:
		case <-giveUp:
			return false
		}
	}
}

// responsePrefix starts every response envelope jsonrpc2 encodes; requests
// and notifications continue with "method" instead.
const responsePrefix = `{"jsonrpc":"2.0","id":`

// responseID returns the id of an encoded response envelope; ok is false for
// requests, notifications and responses with a null id.
func responseID(body []byte) (id jsonrpc2.ID, ok bool) {
	rest, found := bytes.CutPrefix(body, []byte(responsePrefix))
	if !found || len(rest) == 0 {
		return jsonrpc2.ID{}, false
	}
	if rest[0] == '"' {
		dec := json.NewDecoder(bytes.NewReader(rest))
		var s string
		if err := dec.Decode(&s); err != nil {
			return jsonrpc2.ID{}, false
		}
		return jsonrpc2.NewStringID(s), true
	}
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return jsonrpc2.ID{}, false
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil {
		return jsonrpc2.ID{}, false
	}
	return jsonrpc2.NewNumberID(n), true
}

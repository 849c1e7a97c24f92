package main

import (
	"context"
	"sync"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc"
	"github.com/bridge-dev/bridge/rpc/service"
)

// webAsker relays a harness's tool approvals to the tabs of bridge web that
// answer session/requestPermission: every such tab is asked, a tab opened
// while a request waits is asked too, and the first answer decides (the
// other tabs' requests are then withdrawn with $/cancelRequest). With no
// such tab, or when every tab asked has failed, the request fails and the
// preset's policy decides.
type webAsker struct {
	mu      sync.Mutex
	tabs    map[*askTab]struct{}
	pending map[*askRequest]struct{}
}

type askTab struct{ asker service.PermissionAsker }

// askRequest is one request waiting for a tab's answer.
type askRequest struct {
	ctx     context.Context // ends once decided
	p       service.PermissionRequest
	answers chan askAnswer
	asked   int // tabs asked (under webAsker.mu)
}

type askAnswer struct {
	optionID string
	err      error
}

func newWebAsker() *webAsker {
	return &webAsker{tabs: map[*askTab]struct{}{}, pending: map[*askRequest]struct{}{}}
}

// attach adds a tab that answers session/requestPermission through c and
// asks it the requests already waiting; the returned function removes it.
func (w *webAsker) attach(c rpc.Caller) func() {
	t := &askTab{asker: rpc.PermissionAsker(c)}
	w.mu.Lock()
	w.tabs[t] = struct{}{}
	for r := range w.pending {
		w.askLocked(t, r)
	}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.tabs, t)
		w.mu.Unlock()
	}
}

// askLocked asks tab t request r; w.mu is held.
func (w *webAsker) askLocked(t *askTab, r *askRequest) {
	r.asked++
	go func() {
		id, err := t.asker.RequestPermission(r.ctx, r.p)
		select {
		case r.answers <- askAnswer{id, err}:
		case <-r.ctx.Done():
		}
	}()
}

// RequestPermission implements service.PermissionAsker.
func (w *webAsker) RequestPermission(ctx context.Context, p service.PermissionRequest) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // withdraws the question from the tabs that did not answer
	r := &askRequest{ctx: ctx, p: p, answers: make(chan askAnswer)}
	w.mu.Lock()
	if len(w.tabs) == 0 {
		w.mu.Unlock()
		return "", core.Errorf(core.CodeUnavailable, "no open WebUI tab answers approvals")
	}
	w.pending[r] = struct{}{}
	for t := range w.tabs {
		w.askLocked(t, r)
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.pending, r)
		w.mu.Unlock()
	}()
	failed := 0
	for {
		select {
		case a := <-r.answers:
			if a.err == nil {
				return a.optionID, nil
			}
			failed++
			w.mu.Lock()
			all := failed >= r.asked
			w.mu.Unlock()
			if all {
				return "", a.err
			}
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

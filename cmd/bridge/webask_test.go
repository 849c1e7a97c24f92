package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

// tabCaller is a WebUI tab as the asker sees it: each session/requestPermission
// is handed to the test, which answers it (or not) through the call.
type tabCaller struct{ calls chan *tabCall }

type tabCall struct {
	ctx    context.Context
	answer chan error // nil: selected "allow_once"
}

func newTab() *tabCaller { return &tabCaller{calls: make(chan *tabCall, 8)} }

func (c *tabCaller) Call(ctx context.Context, method string, params, result any) error {
	if method != "session/requestPermission" {
		return errors.New("unexpected " + method)
	}
	call := &tabCall{ctx: ctx, answer: make(chan error, 1)}
	c.calls <- call
	select {
	case err := <-call.answer:
		if err != nil {
			return err
		}
		b, _ := json.Marshal(schema.SessionRequestPermissionResult{Outcome: schema.PermissionOutcome{Outcome: schema.OutcomeSelected, OptionID: "allow_once"}})
		return json.Unmarshal(b, result)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *tabCaller) next(t *testing.T) *tabCall {
	t.Helper()
	select {
	case call := <-c.calls:
		return call
	case <-time.After(30 * time.Second):
		t.Fatal("the tab was not asked")
		return nil
	}
}

func askIn(w *webAsker) <-chan error {
	done := make(chan error, 1)
	go func() {
		id, err := w.RequestPermission(context.Background(), service.PermissionRequest{SessionID: "s1",
			Request: core.ApprovalRequest{ID: "a1", ToolCallID: "t1", Title: "Bash: ls", Options: core.DefaultApprovalOptions()}})
		if err == nil && id != "allow_once" {
			err = errors.New("answered " + id)
		}
		done <- err
	}()
	return done
}

// TestWebAskerFirstTabDecides: every tab that answers approvals is asked,
// a tab opened while the question waits is asked too, the first answer
// decides and the other tabs' questions are withdrawn; a tab that fails
// leaves the others to answer; with no tab, the preset's policy decides.
func TestWebAskerFirstTabDecides(t *testing.T) {
	w := newWebAsker()
	if err := <-askIn(w); err == nil || core.ErrorCode(err) != core.CodeUnavailable {
		t.Fatalf("with no tab: %v, want an unavailable error", err)
	}
	a, b, late := newTab(), newTab(), newTab()
	detachA := w.attach(a)
	w.attach(b)
	done := askIn(w)
	qa, qb := a.next(t), b.next(t)
	w.attach(late)
	ql := late.next(t) // opened while the question waits: asked too
	qa.answer <- errors.New("tab closed")
	detachA()
	qb.answer <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-ql.ctx.Done(): // withdrawn from the tab that did not answer
	case <-time.After(30 * time.Second):
		t.Fatal("the late tab's question was not withdrawn")
	}
	// Every tab asked fails: the error goes to the policy.
	done = askIn(w)
	b.next(t).answer <- errors.New("b failed")
	late.next(t).answer <- errors.New("late failed")
	if err := <-done; err == nil {
		t.Fatal("all tabs failed, yet the request succeeded")
	}
}

package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/queue"
	"github.com/bridge-dev/bridge/schema"
)

// gate is a one-token turn, as live.TurnGate.
type gate chan struct{}

func (g gate) TryLock() bool {
	select {
	case g <- struct{}{}:
		return true
	default:
		return false
	}
}
func (g gate) C() chan<- struct{} { return g }
func (g gate) Unlock()            { <-g }

type session struct{ g gate }

func (s session) Gate() queue.Gate { return s.g }
func (s session) Current() bool    { return true }

// TestQueueRunsInOrderAndWithdraws: with the turn held, three prompts
// wait and the client hears of each; the second is withdrawn (its Await
// ends with ErrWithdrawn, the list is a and c); when the turn is released
// the first runs holding the turn, and the third only after it is Done and
// the turn released again.
func TestQueueRunsInOrderAndWithdraws(t *testing.T) {
	heard := make(chan []schema.QueuedPrompt, 100)
	qs := queue.New(func(_ string, items []schema.QueuedPrompt) { heard <- items })
	s := session{make(gate, 1)}
	s.g.TryLock() // a turn runs
	open := func(context.Context) (queue.Live, error) { return s, nil }
	ctx := context.Background()
	var ps []*queue.Prompt
	for _, id := range []string{"a", "b", "c"} {
		p, err := qs.Add("s1", id, []core.Content{{Type: "text", Text: id}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if _, err := qs.Add("s1", "a", nil, time.Now()); core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("a second prompt a: %v, want invalid", err)
	}
	ran := make(chan string, 3)
	withdrawn := make(chan error, 3)
	for i, p := range ps {
		go func() {
			if _, err := qs.Await(ctx, p, open); err != nil {
				withdrawn <- err
				return
			}
			ran <- []string{"a", "b", "c"}[i]
		}()
	}
	for range 3 { // each prompt tells the client it waits
		<-heard
	}
	if n := qs.Withdraw("s1", "b"); n != 1 {
		t.Fatalf("Withdraw b took %d", n)
	}
	if err := <-withdrawn; !errors.Is(err, queue.ErrWithdrawn) {
		t.Fatalf("b's Await: %v, want ErrWithdrawn", err)
	}
	if got := qs.Items("s1"); len(got) != 2 || got[0].PromptID != "a" || got[1].PromptID != "c" {
		t.Fatalf("queue after withdrawing b: %+v, want a, c", got)
	}
	s.g.Unlock()
	if got := <-ran; got != "a" {
		t.Fatalf("first to run: %s, want a", got)
	}
	if !qs.Running("s1") || s.g.TryLock() {
		t.Fatal("a runs without holding the turn")
	}
	qs.Done(ps[0])
	s.g.Unlock()
	if got := <-ran; got != "c" {
		t.Fatalf("second to run: %s, want c", got)
	}
	qs.Done(ps[2])
	s.g.Unlock()
	if qs.Running("s1") || len(qs.Items("s1")) != 0 {
		t.Fatalf("after both ran: running %v, items %+v", qs.Running("s1"), qs.Items("s1"))
	}
}

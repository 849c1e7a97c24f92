package service_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
	"github.com/bridge-dev/bridge/schema"
)

// promptAsync sends a session/prompt and returns where its answer arrives.
func promptAsync(r *rig, p schema.SessionPromptParams) <-chan promptAnswer {
	ch := make(chan promptAnswer, 1)
	go func() {
		res, err := r.svc.SessionPrompt(context.Background(), p)
		ch <- promptAnswer{res, err}
	}()
	return ch
}

type promptAnswer struct {
	res schema.SessionPromptResult
	err error
}

func text(s string) []schema.Content { return []schema.Content{{Type: "text", Text: s}} }

// awaitQueue waits until the session's queue lists exactly ids, in order.
func awaitQueue(t *testing.T, r *rig, sid string, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		q, err := r.svc.SessionQueue(context.Background(), schema.SessionQueueParams{SessionID: sid})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range q.Items {
			got = append(got, it.PromptID)
		}
		if equal(got, ids) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue of %s is %v, want %v", sid, got, ids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func answer(t *testing.T, ch <-chan promptAnswer) promptAnswer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(60 * time.Second):
		t.Fatal("no answer to session/prompt")
	}
	return promptAnswer{}
}

// userTexts lists the text of the user.message entries of the active
// branch, with " (steered)" after a steered one.
func userTexts(t *testing.T, r *rig, sid string) []string {
	var out []string
	for _, e := range r.branch(sid) {
		if e.Kind == core.KindUserMessage {
			p := payload(t, e)
			s, _ := p["text"].(string)
			if p["steered"] == true {
				s += " (steered)"
			}
			out = append(out, s)
		}
	}
	return out
}

// TestPromptQueueAndSteer: prompts sent while a turn runs wait in order,
// one is withdrawn, one is steered into the running turn, and after the
// turn is cancelled (queue kept) the first queued prompt runs.
func TestPromptQueueAndSteer(t *testing.T) {
	qr := &queueRecorder{}
	r := newRig(t, rigOptions{notifier: func(rec *servicetest.Recorder) service.Notifier { qr.Recorder = rec; return qr }})
	sid := r.create().ID
	running := promptAsync(r, schema.SessionPromptParams{SessionID: sid, Content: text("hang")})
	awaitUserMessage(t, r, "hang")
	b := promptAsync(r, schema.SessionPromptParams{SessionID: sid, Content: text("second"), PromptID: "b"})
	awaitQueue(t, r, sid, "b")
	c := promptAsync(r, schema.SessionPromptParams{SessionID: sid, Content: text("third"), PromptID: "c"})
	awaitQueue(t, r, sid, "b", "c")
	if _, err := r.svc.SessionPrompt(context.Background(), schema.SessionPromptParams{SessionID: sid, Content: text("x"), PromptID: "b"}); core.ErrorCode(err) != core.CodeInvalid {
		t.Fatalf("a second prompt with a queued promptId: %v, want invalid", err)
	}

	if _, err := r.svc.SessionWithdraw(context.Background(), schema.SessionWithdrawParams{SessionID: sid, PromptID: "c"}); err != nil {
		t.Fatal(err)
	}
	if a := answer(t, c); a.err != nil || a.res.StopReason != schema.StopWithdrawn || !a.res.Queued || a.res.PromptID != "c" {
		t.Fatalf("withdrawn prompt answered %+v, %v", a.res, a.err)
	}
	awaitQueue(t, r, sid, "b")
	if _, err := r.svc.SessionWithdraw(context.Background(), schema.SessionWithdrawParams{SessionID: sid, PromptID: "c"}); core.ErrorCode(err) != core.CodeNotFound {
		t.Fatalf("withdrawing it again: %v, want not_found", err)
	}

	st, err := r.svc.SessionPrompt(context.Background(), schema.SessionPromptParams{SessionID: sid, Content: text("mind the tests"), Steer: true})
	if err != nil || st.StopReason != schema.StopSteered {
		t.Fatalf("steer: %+v, %v", st, err)
	}
	r.rec.Await(t, "the steered text reaches the running turn", func() bool {
		for _, e := range r.rec.Entries {
			if e.Kind == core.KindAssistantMessage && strings.Contains(string(e.Payload), "fake steered: mind the tests") {
				return true
			}
		}
		return false
	})
	awaitQueue(t, r, sid, "b") // the steer did not join the queue

	if _, err := r.svc.SessionCancel(context.Background(), schema.SessionCancelParams{SessionID: sid}); err != nil {
		t.Fatal(err)
	}
	if a := answer(t, running); a.err != nil || a.res.StopReason != "cancelled" || a.res.Queued {
		t.Fatalf("cancelled turn answered %+v, %v", a.res, a.err)
	}
	if a := answer(t, b); a.err != nil || a.res.StopReason != "end_turn" || !a.res.Queued || a.res.PromptID != "b" {
		t.Fatalf("queued prompt answered %+v, %v", a.res, a.err)
	}
	awaitQueue(t, r, sid)
	got := userTexts(t, r, sid)
	want := []string{"hang", "mind the tests (steered)", "second"}
	if !equal(got, want) {
		t.Fatalf("user messages %q, want %q (the withdrawn one never recorded)", got, want)
	}
	r.rec.Await(t, "queue notifications", func() bool {
		qr.mu.Lock()
		defer qr.mu.Unlock()
		var last []schema.QueuedPrompt
		seen := 0
		for _, q := range qr.changes {
			if q.sessionID == sid {
				seen++
				last = q.items
			}
		}
		return seen >= 3 && len(last) == 0
	})
}

// queueRecorder is a recorder that also hears session/queueChanged.
type queueRecorder struct {
	*servicetest.Recorder
	mu      sync.Mutex
	changes []struct {
		sessionID string
		items     []schema.QueuedPrompt
	}
}

func (q *queueRecorder) QueueChanged(sessionID string, items []schema.QueuedPrompt) {
	q.mu.Lock()
	q.changes = append(q.changes, struct {
		sessionID string
		items     []schema.QueuedPrompt
	}{sessionID, items})
	q.mu.Unlock()
	q.Recorder.Log(4, "queue changed") // wakes Await
}

// TestCancelClearsQueue: session/cancel with clearQueue withdraws every
// queued prompt; none of them runs.
func TestCancelClearsQueue(t *testing.T) {
	r := newRig(t, rigOptions{})
	sid := r.create().ID
	running := promptAsync(r, schema.SessionPromptParams{SessionID: sid, Content: text("hang")})
	awaitUserMessage(t, r, "hang")
	d := promptAsync(r, schema.SessionPromptParams{SessionID: sid, Content: text("later"), PromptID: "d"})
	awaitQueue(t, r, sid, "d")
	if _, err := r.svc.SessionCancel(context.Background(), schema.SessionCancelParams{SessionID: sid, ClearQueue: true}); err != nil {
		t.Fatal(err)
	}
	if a := answer(t, d); a.err != nil || a.res.StopReason != schema.StopWithdrawn {
		t.Fatalf("queued prompt after cancel with clearQueue: %+v, %v", a.res, a.err)
	}
	if a := answer(t, running); a.res.StopReason != "cancelled" {
		t.Fatalf("running turn: %+v, %v", a.res, a.err)
	}
	if got := userTexts(t, r, sid); !equal(got, []string{"hang"}) {
		t.Fatalf("user messages %q, want only the cancelled turn's", got)
	}
}

// TestSteerRefusedWithoutCapability: a harness that cannot take input
// mid-turn refuses a steer, naming prompt.steer, and records nothing; a
// steer with no turn running runs as a turn of its own.
func TestSteerRefusedWithoutCapability(t *testing.T) {
	r := newRig(t, rigOptions{fake: fake.Options{Missing: []string{core.CapPromptSteer}}})
	sid := r.create().ID
	alone, err := r.svc.SessionPrompt(context.Background(), schema.SessionPromptParams{SessionID: sid, Content: text("no turn runs"), Steer: true})
	if err != nil || alone.StopReason != "end_turn" {
		t.Fatalf("steer with no turn running: %+v, %v", alone, err)
	}
	running := promptAsync(r, schema.SessionPromptParams{SessionID: sid, Content: text("hang")})
	awaitUserMessage(t, r, "hang")
	_, err = r.svc.SessionPrompt(context.Background(), schema.SessionPromptParams{SessionID: sid, Content: text("steer"), Steer: true})
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != core.CodeUnavailable || !strings.Contains(fmt.Sprint(ce.Missing), core.CapPromptSteer) {
		t.Fatalf("steer without prompt.steer: %v, want unavailable naming it", err)
	}
	if _, err := r.svc.SessionCancel(context.Background(), schema.SessionCancelParams{SessionID: sid}); err != nil {
		t.Fatal(err)
	}
	answer(t, running)
	for _, s := range userTexts(t, r, sid) {
		if s == "steer (steered)" {
			t.Fatalf("a refused steer was recorded: %q", userTexts(t, r, sid))
		}
	}
}

// awaitUserMessage waits until a user.message with text was announced.
func awaitUserMessage(t *testing.T, r *rig, text string) {
	t.Helper()
	r.rec.Await(t, "user.message "+text, func() bool {
		for _, e := range r.rec.Entries {
			if e.Kind == core.KindUserMessage && strings.Contains(string(e.Payload), `"text":"`+text+`"`) {
				return true
			}
		}
		return false
	})
}

package dsh_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/dsh"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// historyTap keeps the session.history answers the adapter reads.
type historyTap struct {
	mu    sync.Mutex
	pages []string
}

func (h *historyTap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/session.history") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	h.mu.Lock()
	h.pages = append(h.pages, string(body))
	h.mu.Unlock()
	return resp, nil
}

// take returns the answers read since the last take.
func (h *historyTap) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.pages
	h.pages = nil
	return p
}

// TestRealFollowingReadsOnlyTheNewEnd: on the real DeepSeek Harness, with
// a session of 30 turns, neither following a turn nor forking the session
// for a checkpoint makes DSH send the conversation's beginning again: every
// session.history answer the adapter reads while a turn runs, and while
// Fork prepares the fork, holds none of the first turns. (A poll used to
// ask for the newest 60 messages and a fork read its whole seed, all of it
// serialized by the DSH server the live session runs on.) The fork still
// answers from the whole conversation and leaves the live session as it
// was.
func TestRealFollowingReadsOnlyTheNewEnd(t *testing.T) {
	model, r := startReal(t)
	model.Responder(func(req fakemodel.Request) (fakemodel.Reply, bool) {
		if strings.Contains(req.LastUserText, "Which turn came first?") {
			first := strings.Contains(string(req.Body), "Turn 0001 of the follow test")
			return fakemodel.Reply{Text: fmt.Sprintf("The fork sees turn 0001: %v.", first)}, true
		}
		return fakemodel.Reply{Text: "Noted."}, true
	})
	tap := &historyTap{}
	h := dsh.New(dsh.Config{BaseURL: r.URL, PollInterval: 20 * time.Millisecond, HTTPClient: &http.Client{Transport: tap, Timeout: time.Minute}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var liveEntries int
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: t.TempDir()}, func(ev core.Event) {
		if ev.Entry != nil {
			mu.Lock()
			liveEntries++
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	turn := func(n int) {
		t.Helper()
		res, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: fmt.Sprintf("Turn %04d of the follow test.", n)}})
		if err != nil || res.StopReason != "end_turn" {
			t.Fatalf("turn %d: %+v %v", n, res, err)
		}
	}
	for n := 1; n <= 30; n++ {
		turn(n)
	}
	old := func(what string, pages []string) {
		t.Helper()
		if len(pages) == 0 {
			t.Fatalf("%s read no session.history", what)
		}
		for _, p := range pages {
			for n := 1; n <= 5; n++ {
				if s := fmt.Sprintf("Turn %04d of the follow test", n); strings.Contains(p, s) {
					t.Fatalf("%s: DSH sent the conversation's beginning again (%q in a %d-byte session.history answer)", what, s, len(p))
				}
			}
		}
	}
	tap.take()
	turn(31)
	old("following turn 31", tap.take())

	mu.Lock()
	before := liveEntries
	mu.Unlock()
	fk, err := l.(core.Forker).Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old("Fork", tap.take())
	rep, err := fk.Ask(ctx, "Which turn came first?")
	if err != nil || !strings.Contains(rep.Text, "The fork sees turn 0001: true.") {
		t.Fatalf("fork Ask = %q, %v (want the whole conversation in the fork's request)", rep.Text, err)
	}
	old("the fork's turn", tap.take())
	if err := fk.Close(ctx); err != nil {
		t.Fatal(err)
	}
	turn(32)
	mu.Lock()
	after := liveEntries
	mu.Unlock()
	if got := after - before; got != 2 {
		t.Errorf("the live session recorded %d entries between the fork and its next turn, want 2 (turn 32's user and assistant messages)", got)
	}
	if last := model.Requests(); strings.Contains(string(last[len(last)-1].Body), "Which turn came first?") {
		t.Errorf("the live thread's next request carries the fork's prompt")
	}
}

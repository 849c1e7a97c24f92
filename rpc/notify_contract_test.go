package rpc

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/schema/validate"
)

// notifierSends maps every method of the interfaces through which the
// service tells a client something to the notification the server sends for
// it. A method added to one of those interfaces fails
// TestEveryNotificationIsInTheContract until it has a row here (and is
// driven there).
var notifierSends = map[string]string{
	"EntryAppended":    "session/update",
	"ContextCompacted": "session/contextCompacted",
	"CheckpointSaved":  "session/checkpointSaved",
	"Restored":         "session/restored",
	"Log":              "window/logMessage",
	"QueueChanged":     "session/queueChanged",
}

// TestEveryNotificationIsInTheContract drives every way the server notifies
// its client (each peer.Notifier and peer.QueueNotifier method, work-done
// progress from begin to end, and the $/cancelRequest of a cancelled call
// back to the client) and checks each notification the client receives:
// its method is a notification row of schema.Methods that Bridge may send,
// and its params validate against that row's params definition in the
// generated contract. Every method the test drives must have arrived.
func TestEveryNotificationIsInTheContract(t *testing.T) {
	for _, it := range []reflect.Type{reflect.TypeFor[peer.Notifier](), reflect.TypeFor[peer.QueueNotifier]()} {
		for i := range it.NumMethod() {
			if _, ok := notifierSends[it.Method(i).Name]; !ok {
				t.Errorf("%s.%s sends a notification this test does not know: add it to notifierSends and drive it", it, it.Method(i).Name)
			}
		}
	}

	fake := newFake()
	c, ns, cs := notifyingServer(t, fake)
	c.initialize()
	n := <-ns
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pre, post, shadowed := int64(150000), int64(30000), int64(90000)
	n.EntryAppended(core.Entry{ID: "e1", SessionID: "s1", Seq: 1, Kind: core.KindUserMessage,
		Payload: core.Payload(core.UserMessagePayload{Text: "hello"}), CreatedAt: at})
	n.ContextCompacted(peer.ContextCompacted{SessionID: "s1", EntryID: "e5", Harness: "claude-code", Trigger: schema.TriggerAuto,
		PreTokens: &pre, PostTokens: &post, Estimated: true, ShadowedTokens: &shadowed, Cause: core.CausePressure})
	n.CheckpointSaved(peer.CheckpointSaved{SessionID: "s1", EntryID: "e6", Reason: checkpoint.ReasonManual,
		Provenance: schema.ProvenanceAgent, Method: schema.MethodFork, Hot: true})
	n.Restored(peer.Restored{SessionID: "s1", Mode: core.ModeCheckpointRestored, Reason: "native resume failed",
		NativeError: "no thread", CheckpointEntryID: "e6"})
	n.Log(2, "codex is older than 0.169")
	qn, ok := n.(peer.QueueNotifier)
	if !ok {
		t.Fatal("the server's Notifier is not a peer.QueueNotifier")
	}
	qn.QueueChanged("s1", []schema.QueuedPrompt{{PromptID: "q1", Text: "next", QueuedAt: at}})

	// $/progress: begin, report and end of a prompt with a workDoneToken.
	fake.prompt = func(ctx context.Context, _ schema.SessionPromptParams) (schema.SessionPromptResult, error) {
		peer.ProgressFrom(ctx)(1, 2, "thinking")
		return schema.SessionPromptResult{StopReason: "end_turn"}, nil
	}
	c.MustCall("session/prompt", schema.SessionPromptParams{SessionID: "s1", Content: []schema.Content{{Type: "text", Text: "x"}},
		WorkDoneProgressParams: schema.WorkDoneProgressParams{WorkDoneToken: new(schema.StringToken("tok"))}}, nil)

	// $/cancelRequest: a call back to the client, cancelled before it is
	// answered (the client never answers host/session.prompt).
	c.SetOnRequest(func(m wireMsg) (any, *wireErr) { return nil, nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (<-cs).Call(ctx, "host/session.prompt", schema.HostSessionPromptParams{NativeID: "n1"}, nil)
	}()
	c.Await("host/session.prompt", func(m wireMsg) bool { return m.Method == "host/session.prompt" })
	cancel()
	<-done

	want := []string{"$/cancelRequest", "$/progress"}
	for _, m := range notifierSends {
		want = append(want, m)
	}
	for _, m := range want {
		c.AwaitNotification(m, nil)
	}
	seen := map[string]bool{}
	for _, m := range c.Messages() {
		if m.Method == "" || m.ID != nil {
			continue // a reply, or a request to the client
		}
		seen[m.Method] = true
		row, ok := schema.MethodByName(m.Method)
		if !ok || row.Kind != schema.Notification || (row.Direction != schema.ServerToClient && row.Direction != schema.Both) {
			t.Errorf("the server sent %s, which is not a notification of the contract that Bridge sends", m.Method)
			continue
		}
		if row.Params == nil {
			t.Errorf("%s: the contract gives it no params type", m.Method)
			continue
		}
		if err := validate.JSON(validate.DefName(row.Params), m.Params); err != nil {
			t.Errorf("%s: params %s do not validate against %s: %v", m.Method, m.Params, validate.DefName(row.Params), err)
		}
	}
	var got []string
	for m := range seen {
		got = append(got, m)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("notifications sent: %v, want %v", got, want)
	}
}

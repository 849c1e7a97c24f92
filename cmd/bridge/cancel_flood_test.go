package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestCancelOfAFloodingTurn: a turn that reports entries as fast as it can
// (fake `stream 100000`) is cancelled. The cancel is answered, the prompt
// ends "cancelled", and what the harness had reported but Bridge had not
// yet announced is recorded after the answer without being announced as if
// it were live: no session/update arrives after the cancel's reply (one may
// have been under way). Every announced entry is in the record.
func TestCancelOfAFloodingTurn(t *testing.T) {
	c := startBridge(t, t.TempDir())
	c.initialize(nil)
	sid := createFake(t, c)
	c.Send(77, "session/prompt", schema.SessionPromptParams{SessionID: sid, Content: prompt("stream 100000")})
	rpctest.Await(c.Client, schema.NoticeSessionUpdate, func(u schema.SessionUpdateNotification) bool {
		return u.SessionID == sid && strings.Contains(string(u.Entry.Payload), "stream 1/100000")
	})
	start := time.Now()
	rpctest.Must(c.Client, c.SessionCancel, schema.SessionCancelParams{SessionID: sid})
	cancelTook := time.Since(start)
	atCancel := len(c.Sent("session/update"))
	m := c.Reply(`77`)
	promptTook := time.Since(start)
	t.Logf("cancel answered after %v, prompt after %v; %d updates announced by then", cancelTook, promptTook, len(c.Sent("session/update")))
	var res struct {
		StopReason string `json:"stopReason"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.StopReason != "cancelled" {
		t.Fatalf("prompt after cancel: %+v %s", m.Error, m.Result)
	}
	announcedAtReply := len(c.Sent("session/update"))
	// At most one announcement can have been under way as the cancel was
	// answered; nothing of the backlog follows it.
	if late := announcedAtReply - atCancel; late > 1 {
		t.Fatalf("%d entries were announced after the cancel was answered", late)
	}
	// The session takes the next prompt, after the backlog is recorded.
	rpctest.Must(c.Client, c.SessionPrompt, schema.SessionPromptParams{SessionID: sid, Content: prompt("say after")})
	var after []wireMsg
	for _, n := range c.Sent("session/update")[announcedAtReply:] {
		if strings.Contains(string(n.Params), "/100000") {
			after = append(after, n)
		}
	}
	if len(after) > 0 {
		t.Fatalf("%d streamed entries were announced after the prompt's reply (first %.200s)", len(after), after[0].Params)
	}
	hist := rpctest.Must(c.Client, c.SessionHistory, schema.SessionHistoryParams{SessionID: sid, MaxMessages: 1000000})
	streamed := 0
	for _, e := range hist.Entries {
		if strings.Contains(string(e.Payload), "/100000") {
			streamed++
		}
	}
	announced := 0
	for _, n := range c.Sent("session/update")[:announcedAtReply] {
		if strings.Contains(string(n.Params), "/100000") {
			announced++
		}
	}
	if streamed < announced {
		t.Fatalf("record holds %d streamed entries, fewer than the %d announced", streamed, announced)
	}
	t.Logf("cancel answered after %v, prompt after %v; %d streamed entries announced, %d recorded", cancelTook, promptTook, announced, streamed)
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

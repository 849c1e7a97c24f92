package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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
	c.sendWithID(`77`, "session/prompt", map[string]any{"sessionId": sid, "content": prompt("stream 100000")})
	c.awaitNote("a streamed entry", func(m wireMsg) bool {
		return m.Method == "session/update" && strings.Contains(string(m.Params), "stream 1/100000")
	})
	start := time.Now()
	c.MustCall("session/cancel", map[string]any{"sessionId": sid}, nil)
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
	c.MustCall("session/prompt", map[string]any{"sessionId": sid, "content": prompt("say after")}, nil)
	var after []wireMsg
	for _, n := range c.Sent("session/update")[announcedAtReply:] {
		if strings.Contains(string(n.Params), "/100000") {
			after = append(after, n)
		}
	}
	if len(after) > 0 {
		t.Fatalf("%d streamed entries were announced after the prompt's reply (first %.200s)", len(after), after[0].Params)
	}
	var hist struct {
		Entries []json.RawMessage `json:"entries"`
	}
	c.MustCall("session/history", map[string]any{"sessionId": sid, "maxMessages": 1000000}, &hist)
	streamed := 0
	for _, e := range hist.Entries {
		if strings.Contains(string(e), "/100000") {
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

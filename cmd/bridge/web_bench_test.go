package main

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/bridge-dev/bridge/schema"
)

// BenchmarkHistoryPageTransport: the newest session/history page (40
// messages, the WebUI's page) of a 100,000-entry session, over bridge
// web's WebSocket against the same page over stdio from bridge serve on the
// same database. Goal: WebSocket ≥ 0.8× stdio's rate.
func BenchmarkHistoryPageTransport(b *testing.B) {
	dir := b.TempDir()
	sid := seedSession(b, dir, 100_000)
	params := schema.SessionHistoryParams{SessionID: sid, MaxMessages: 40}

	stdio := startBridge(b, dir)
	stdio.initialize(nil)
	w := startWeb(b, dir, "BRIDGE_CPUPROFILE="+os.Getenv("BRIDGE_WEB_CPUPROFILE"))
	ws := w.dial(b)
	ws.initialize(nil)
	var a, c json.RawMessage
	stdio.MustCall("session/history", params, &a)
	ws.MustCall("session/history", params, &c)
	if string(a) != string(c) {
		b.Fatal("the two transports answered different pages")
	}
	b.Run("stdio", func(b *testing.B) {
		b.SetBytes(int64(len(a)))
		for i := 0; i < b.N; i++ {
			stdio.MustCall("session/history", params, nil)
		}
	})
	b.Run("websocket", func(b *testing.B) {
		b.SetBytes(int64(len(a)))
		for i := 0; i < b.N; i++ {
			ws.MustCall("session/history", params, nil)
		}
	})
	stdio.exit(true)
}

package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// BenchmarkCancelLatency measures how long a session/cancel takes to be
// answered and its prompt to end, while two other sessions flood entries
// (fake `stream 300000`). "flood" cancels a turn that reports
// `stream 100000` as fast as it can (a backlog of entries queued behind
// the recorder); "hang" cancels a turn with nothing queued, the baseline of
// the same run. Reported: p50 and p99 of cancel-answered and
// prompt-answered, in ms.
//
//	go test ./cmd/bridge -run '^$' -bench CancelLatency -benchtime 40x
func BenchmarkCancelLatency(b *testing.B) {
	for _, turn := range []string{"hang", "flood"} {
		b.Run(turn, func(b *testing.B) {
			c := startBridge(b, b.TempDir())
			c.initialize(nil)
			var load []string
			for range 2 {
				sid := benchFake(b, c)
				c.Request("session/prompt", schema.SessionPromptParams{SessionID: sid, Content: prompt("stream 300000")})
				load = append(load, sid)
			}
			sid := benchFake(b, c)
			var cancelMs, promptMs []float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				text, mark := "hang", ""
				if turn == "flood" {
					text, mark = "stream 100000", "stream 1/100000"
				}
				id := c.Request("session/prompt", schema.SessionPromptParams{SessionID: sid, Content: prompt(text)})
				if mark != "" {
					// The i+1-th announcement of the turn's first entry.
					seen := 0
					rpctest.Await(c.Client, schema.NoticeSessionUpdate, func(u schema.SessionUpdateNotification) bool {
						if strings.Contains(string(u.Entry.Payload), mark) {
							seen++
						}
						return seen > i
					})
				} else {
					time.Sleep(5 * time.Millisecond) // the turn has started
				}
				start := time.Now()
				rpctest.Must(c.Client, c.SessionCancel, schema.SessionCancelParams{SessionID: sid})
				cancelMs = append(cancelMs, float64(time.Since(start).Microseconds())/1000)
				if m := c.Reply(id); m.Error != nil {
					b.Fatalf("prompt: %+v", m.Error)
				}
				promptMs = append(promptMs, float64(time.Since(start).Microseconds())/1000)
			}
			b.StopTimer()
			b.ReportMetric(pct(cancelMs, 50), "cancel-p50-ms")
			b.ReportMetric(pct(cancelMs, 99), "cancel-p99-ms")
			b.ReportMetric(pct(promptMs, 50), "prompt-p50-ms")
			b.ReportMetric(pct(promptMs, 99), "prompt-p99-ms")
			for _, l := range load {
				rpctest.Must(c.Client, c.SessionCancel, schema.SessionCancelParams{SessionID: l})
			}
		})
	}
}

func benchFake(b *testing.B, c *client) string {
	s, err := c.SessionCreate(b.Context(), schema.SessionCreateParams{Harness: "fake", Cwd: b.TempDir(), Title: "bench"})
	if err != nil || s.SessionID == "" {
		b.Fatalf("no session: %v", err)
	}
	return s.SessionID
}

// pct is the p-th percentile of xs (nearest rank).
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

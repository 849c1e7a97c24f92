package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// BenchmarkEventLatency measures the latency the adapter adds per SSE event:
// from the moment a local server (httptest on 127.0.0.1) writes a
// message.part.updated event to the moment the session's EventSink receives
// the mapped assistant.message. Each iteration streams 10,000 events, one
// at a time (the server writes the next event once the sink has the last,
// so the figure is per-event latency, not queueing behind a backlog); p50
// and p99 are reported in microseconds.
func BenchmarkEventLatency(b *testing.B) {
	const perRun = 10000
	bursts := make(chan int)
	got := make(chan struct{}, 1)
	done := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /global/event", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"payload\":{\"id\":\"evt_c\",\"type\":\"server.connected\",\"properties\":{}}}\n\n")
		w.(http.Flusher).Flush()
		n := 0
		for {
			select {
			case <-r.Context().Done():
				return
			case count := <-bursts:
				// Describe the message first, so its text parts map at once.
				fmt.Fprint(w, `data: {"directory":"/p","payload":{"id":"evt_m","type":"message.updated","properties":{"sessionID":"ses_bench","info":{"id":"msg_b","role":"assistant"}}}}`+"\n\n")
				for i := 0; i < count; i++ {
					n++
					ts := strconv.FormatInt(time.Now().UnixNano(), 10)
					fmt.Fprintf(w, `data: {"directory":"/p","project":"global","payload":{"id":"evt_%d","type":"message.part.updated","properties":{"sessionID":"ses_bench","part":{"id":"prt_%d","messageID":"msg_b","sessionID":"ses_bench","type":"text","text":"%s","time":{"start":1,"end":2}},"time":1}}}`+"\n\n", n, n, ts)
					w.(http.Flusher).Flush()
					select {
					case <-got:
					case <-r.Context().Done():
						return
					}
				}
				done <- struct{}{}
			}
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	h := New(Config{})
	s, err := h.attach(context.Background(), srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())

	var mu sync.Mutex
	lat := make([]time.Duration, 0, perRun*b.N)
	sink := func(ev core.Event) {
		if ev.Entry == nil || ev.Entry.Kind != core.KindAssistantMessage {
			return
		}
		now := time.Now()
		var p struct {
			Text string `json:"text"`
		}
		_ = jsonUnmarshal(ev.Entry.Payload, &p)
		sent, err := strconv.ParseInt(p.Text, 10, 64)
		if err == nil {
			mu.Lock()
			lat = append(lat, now.Sub(time.Unix(0, sent)))
			mu.Unlock()
		}
		got <- struct{}{}
	}
	l := h.newLive(s, "ses_bench", "/p", sink)
	defer l.Close(context.Background())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bursts <- perRun
		<-done
	}
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no latency samples")
	}
	pct := func(q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(perRun), "events/op")
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

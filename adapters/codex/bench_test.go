package codex

import (
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// BenchmarkEventLatency measures the latency Bridge adds per harness event:
// a fake app-server process writes 10,000 item/completed notifications (its
// send time in each item id, one every 50 µs so the pipe does not queue),
// and the EventSink notes when each arrives. Reported: p50 and p99 from the
// line leaving the fake to the sink call (pipe + decode + mapping).
func BenchmarkEventLatency(b *testing.B) {
	const n = 10000
	ctx := ctxT(b)
	lat := make([]time.Duration, 0, n)
	sink := func(e core.Event) {
		now := time.Now().UnixNano()
		if e.Entry == nil || e.Entry.Kind != core.KindAssistantMessage {
			return
		}
		i := strings.LastIndexByte(e.Entry.NativeID, '-')
		sent, err := strconv.ParseInt(e.Entry.NativeID[i+1:], 10, 64)
		if err == nil {
			lat = append(lat, time.Duration(now-sent))
		}
	}
	l, err := fakeHost(b, "flood:"+strconv.Itoa(n)+":50").CreateSession(ctx, core.CreateRequest{}, sink)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	var all []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lat = lat[:0]
		if _, err := l.Prompt(ctx, text("go")); err != nil {
			b.Fatal(err)
		}
		if len(lat) != n {
			b.Fatalf("sink saw %d events, want %d", len(lat), n)
		}
		all = append(all, lat...)
	}
	b.StopTimer()
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds()), "p50-ns/event")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "p99-ns/event")
	b.ReportMetric(0, "ns/op")
}

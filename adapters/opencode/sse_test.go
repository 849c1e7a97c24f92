package opencode

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

// parseAll runs the parser over input, whole and one byte at a time (a
// line end split across reads), and returns the events.
func parseAll(t *testing.T, input string) ([]sseMessage, *sseParser) {
	t.Helper()
	var whole, bytewise []sseMessage
	var p1, p2 sseParser
	if err := p1.read(strings.NewReader(input), func(m sseMessage) {
		m.Data = append([]byte(nil), m.Data...)
		whole = append(whole, m)
	}); err != nil {
		t.Fatal(err)
	}
	if err := p2.read(iotest.OneByteReader(strings.NewReader(input)), func(m sseMessage) {
		m.Data = append([]byte(nil), m.Data...)
		bytewise = append(bytewise, m)
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(whole, bytewise) {
		t.Fatalf("%q: read whole %+v, byte by byte %+v", input, whole, bytewise)
	}
	return whole, &p1
}

type wantEvent struct{ typ, data, id string }

// TestSSEParsing runs the event-stream parsing cases of the WHATWG HTML
// standard ("Interpreting an event stream", its examples, and the
// web-platform-tests eventsource/format-* cases).
func TestSSEParsing(t *testing.T) {
	for _, c := range []struct {
		name, input string
		want        []wantEvent
	}{
		{"spec example: multi-line data", "data: YHOO\ndata: +2\ndata: 10\n\n",
			[]wantEvent{{"message", "YHOO\n+2\n10", ""}}},
		{"spec example: comments, id, bare id resets", ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
			[]wantEvent{{"message", "first event", "1"}, {"message", "second event", ""}, {"message", " third event", ""}}},
		{"spec example: bare data fields, unterminated last event", "data\n\ndata\ndata\n\ndata:",
			[]wantEvent{{"message", "", ""}, {"message", "\n", ""}}},
		{"spec example: one leading space dropped", "data:test\n\ndata: test\n\n",
			[]wantEvent{{"message", "test", ""}, {"message", "test", ""}}},
		{"CR line endings", "data: a\rdata: b\r\rdata: c\r\r",
			[]wantEvent{{"message", "a\nb", ""}, {"message", "c", ""}}},
		{"CRLF line endings", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n",
			[]wantEvent{{"message", "a\nb", ""}, {"message", "c", ""}}},
		{"mixed line endings", "data: a\r\ndata: b\rdata: c\n\r\n",
			[]wantEvent{{"message", "a\nb\nc", ""}}},
		{"leading BOM dropped once", "\xEF\xBB\xBFdata: 1\n\n\xEF\xBB\xBFdata: 2\n\ndata: 3\n\n",
			[]wantEvent{{"message", "1", ""}, {"message", "3", ""}}},
		{"event type, reset after dispatch", "event: add\ndata: x\n\ndata: y\n\n",
			[]wantEvent{{"add", "x", ""}, {"message", "y", ""}}},
		{"no data, no event", "event: add\n\nid: 3\n\n: comment\n\n", nil},
		{"field names are case-sensitive", "Data: x\n\nDATA: y\n\ndata: z\n\n",
			[]wantEvent{{"message", "z", ""}}},
		{"unknown fields ignored", "foo: bar\ndata: x\nbaz\n\n",
			[]wantEvent{{"message", "x", ""}}},
		{"colon inside the value", "data: a:b: c\n\n",
			[]wantEvent{{"message", "a:b: c", ""}}},
		{"id persists until changed", "id: 7\ndata: a\n\ndata: b\n\nid: 8\ndata: c\n\n",
			[]wantEvent{{"message", "a", "7"}, {"message", "b", "7"}, {"message", "c", "8"}}},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
			[]wantEvent{{"message", "a", "1"}, {"message", "b", "1"}}},
		{"data with only a space after the colon", "data: \n\n",
			[]wantEvent{{"message", "", ""}}},
		{"unterminated event at the end is discarded", "data: a\n\ndata: b\n",
			[]wantEvent{{"message", "a", ""}}},
		{"empty lines before the first field", "\n\n\r\n\rdata: a\n\n",
			[]wantEvent{{"message", "a", ""}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := parseAll(t, c.input)
			var gotW []wantEvent
			for _, m := range got {
				gotW = append(gotW, wantEvent{m.Type, string(m.Data), m.LastEventID})
			}
			if !reflect.DeepEqual(gotW, c.want) {
				t.Fatalf("%q:\n got %q\nwant %q", c.input, gotW, c.want)
			}
		})
	}
}

// TestSSERetry: retry sets the reconnection time only when its value is
// all ASCII digits.
func TestSSERetry(t *testing.T) {
	for _, c := range []struct {
		input string
		want  time.Duration
	}{
		{"retry: 1500\n\n", 1500 * time.Millisecond},
		{"retry: 1500\nretry: 15a\n\n", 1500 * time.Millisecond},
		{"retry: -1\n\n", 0},
		{"retry: +1\n\n", 0},
		{"retry\n\n", 0},
		{"retry: 1.5\n\n", 0},
	} {
		_, p := parseAll(t, c.input)
		if p.retry != c.want {
			t.Errorf("%q: retry %v, want %v", c.input, p.retry, c.want)
		}
	}
}

// TestReconnectDelay: the wait doubles with failed attempts up to the cap,
// a server's retry sets its base, and it is jittered within the upper half.
func TestReconnectDelay(t *testing.T) {
	lowest := func(n int64) int64 { return 0 }
	highest := func(n int64) int64 { return n - 1 }
	for _, c := range []struct {
		base    time.Duration
		n       int
		lo, hi  time.Duration
		comment string
	}{
		{0, 0, reconnectBase / 2, reconnectBase, "default"},
		{0, 3, 4 * reconnectBase, 8 * reconnectBase, "doubled three times"},
		{0, 40, reconnectCap / 2, reconnectCap, "capped"},
		{time.Second, 0, time.Second / 2, time.Second, "server's retry"},
		{time.Minute, 5, time.Minute / 2, time.Minute, "server's retry above the cap"},
	} {
		if lo := reconnectDelay(c.base, c.n, lowest); lo != c.lo {
			t.Errorf("%s: lowest %v, want %v", c.comment, lo, c.lo)
		}
		if hi := reconnectDelay(c.base, c.n, highest); hi != c.hi {
			t.Errorf("%s: highest %v, want %v", c.comment, hi, c.hi)
		}
	}
}

// TestStreamEventsReconnects: after the server drops the stream, the client
// comes back with the Last-Event-ID of the last event it got, and goes on
// receiving events.
func TestStreamEventsReconnects(t *testing.T) {
	var mu sync.Mutex
	var lastIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		n := len(lastIDs)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		// CR line ends, an id and a short retry; then the stream ends.
		fmt.Fprintf(w, "retry: 5\rid: evt-%d\rdata: {\"type\":\"ping\",\"properties\":{\"n\":%d}}\r\r", n, n)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 10)
	go streamEvents(ctx, srv.Client(), srv.URL, func(ev event) {
		got <- string(ev.Properties)
	}, nil, func(err error) { t.Errorf("bad event: %v", err) })
	for i := 1; i <= 3; i++ {
		if p := <-got; p != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("event %d: %s", i, p)
		}
	}
	cancel()
	mu.Lock()
	defer mu.Unlock()
	if lastIDs[0] != "" || lastIDs[1] != "evt-1" || lastIDs[2] != "evt-2" {
		t.Fatalf("Last-Event-ID on each connection: %q", lastIDs)
	}
}

package adaptertest

import (
	"sync"

	"github.com/bridge-dev/bridge/core"
)

// Events is a core.EventSink for adapter tests: it keeps everything a live
// session reports. Pass e.Sink to CreateSession or Resume.
type Events struct {
	mu     sync.Mutex
	events []core.Event
	signal chan struct{}
}

// NewEvents returns an empty Events. The zero value works too, but its
// Changed channel is nil.
func NewEvents() *Events { return &Events{signal: make(chan struct{}, 1)} }

// Sink records ev (with a copy of its entry).
func (e *Events) Sink(ev core.Event) {
	if ev.Entry != nil {
		c := *ev.Entry
		ev.Entry = &c
	}
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
	select {
	case e.signal <- struct{}{}:
	default:
	}
}

// Changed is signalled (without blocking the sink) after each event.
func (e *Events) Changed() <-chan struct{} { return e.signal }

// All returns every event so far.
func (e *Events) All() []core.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]core.Event(nil), e.events...)
}

// Entries returns the entries reported so far.
func (e *Events) Entries() []core.NewEntry {
	var out []core.NewEntry
	for _, ev := range e.All() {
		if ev.Entry != nil {
			out = append(out, *ev.Entry)
		}
	}
	return out
}

// OfKind returns the entries of kind k reported so far.
func (e *Events) OfKind(k core.Kind) []core.NewEntry {
	var out []core.NewEntry
	for _, en := range e.Entries() {
		if en.Kind == k {
			out = append(out, en)
		}
	}
	return out
}

// Gauges returns the context readings reported so far.
func (e *Events) Gauges() []core.Gauge {
	var out []core.Gauge
	for _, ev := range e.All() {
		if ev.Gauge != nil {
			out = append(out, *ev.Gauge)
		}
	}
	return out
}

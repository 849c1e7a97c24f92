package main

import (
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

var _ service.QueueNotifier = (*fanout)(nil)

// QueueChanged tells every tab whose connection can hear it that a
// session's prompt queue changed.
func (f *fanout) QueueChanged(sessionID string, items []schema.QueuedPrompt) {
	f.each(func(n service.Notifier) {
		if q, ok := n.(service.QueueNotifier); ok {
			q.QueueChanged(sessionID, items)
		}
	})
}

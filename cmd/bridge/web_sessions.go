package main

import (
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

var _ service.SessionNotifier = (*fanout)(nil)

// SessionChanged tells every tab whose connection can hear it that a
// session's title, archive flag or active branch changed.
func (f *fanout) SessionChanged(n schema.SessionChangedNotification) {
	f.each(func(x service.Notifier) {
		if s, ok := x.(service.SessionNotifier); ok {
			s.SessionChanged(n)
		}
	})
}

package peer

import "github.com/bridge-dev/bridge/schema"

// SessionNotifier is a Notifier that is also told when a session's title,
// archive flag or active branch changed without an entry being added
// (session/changed), here or in another process sharing the record. The
// service calls it when its Notifier implements it.
type SessionNotifier interface {
	SessionChanged(n schema.SessionChangedNotification)
}

package peer

import "github.com/bridge-dev/bridge/schema"

// QueueNotifier is a Notifier that is also told when a session's prompt
// queue changes (session/queueChanged): a prompt joined it, left it to
// run, or was withdrawn; items is the whole queue after the change. The
// service calls it when its Notifier implements it.
type QueueNotifier interface {
	QueueChanged(sessionID string, items []schema.QueuedPrompt)
}

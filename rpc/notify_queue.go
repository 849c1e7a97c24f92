package rpc

import (
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

var _ peer.QueueNotifier = (*server)(nil)

// QueueChanged sends session/queueChanged.
func (s *server) QueueChanged(sessionID string, items []schema.QueuedPrompt) {
	send(s, schema.NoticeQueueChanged, schema.QueueChangedNotification{SessionID: sessionID, Items: items})
}

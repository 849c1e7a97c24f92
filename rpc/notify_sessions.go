package rpc

import (
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

var _ peer.SessionNotifier = (*server)(nil)

// SessionChanged sends session/changed.
func (s *server) SessionChanged(n schema.SessionChangedNotification) {
	send(s, schema.NoticeSessionChanged, n)
}

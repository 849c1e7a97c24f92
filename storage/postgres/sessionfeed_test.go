package postgres_test

import (
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestSessionFeed runs core.SessionFeed's conformance suite on
// PostgreSQL: two origins on one database stand for two processes.
func TestSessionFeed(t *testing.T) {
	storetest.RunSessionFeed(t, func(t *testing.T) (core.Store, core.Store) {
		url := pgtest.URL(t)
		return openAs(t, url, "proc-a"), openAs(t, url, "proc-b")
	})
}

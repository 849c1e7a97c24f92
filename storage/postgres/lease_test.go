package postgres_test

import (
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/storetest"
)

// TestStoreLeases runs the core.SessionLeases conformance suite against
// PostgreSQL.
func TestStoreLeases(t *testing.T) {
	storetest.RunLeases(t, func(t *testing.T) core.Store { return open(t) })
}

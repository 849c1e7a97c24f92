package service_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/bridge-dev/bridge/core/testhome"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestMain runs the package's tests with HOME and the XDG directories in a
// temporary folder: no test, and no program a test starts, writes into the
// real home. A PostgreSQL cluster a test started (eachStore, outside CI
// without BRIDGE_TEST_POSTGRES) is stopped and removed at the end.
func TestMain(m *testing.M) {
	cleanup, err := testhome.Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "isolating the test home:", err)
		os.Exit(1)
	}
	code := m.Run()
	pgtest.Stop()
	cleanup()
	os.Exit(code)
}

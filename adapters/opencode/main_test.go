package opencode

import (
	"testing"

	"github.com/bridge-dev/bridge/core/testhome"
)

// TestMain runs the package's tests with HOME and the XDG directories in a
// temporary folder: no test, and no program a test starts, writes into the
// real home.
func TestMain(m *testing.M) { testhome.Main(m) }

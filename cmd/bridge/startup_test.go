package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// TestInitializeRetryAfterRefusedHarnessOptions: with --data-dir, serve
// opens the data directory and makes the adapters while initialize is being
// read. An initialize whose harness options are refused gets a clear error
// and leaves nothing half-open: a corrected initialize on the same
// connection succeeds and the service works.
func TestInitializeRetryAfterRefusedHarnessOptions(t *testing.T) {
	c := startBridge(t, t.TempDir())
	for _, bad := range []map[string]json.RawMessage{
		{"nosuch": json.RawMessage(`{}`)},
		{"fake": json.RawMessage(`{"nosuchKey":true}`)},
	} {
		werr := rpctest.ErrorOf(c.Initialize(t.Context(), schema.InitializeParams{InitializationOptions: &schema.InitializationOptions{Harnesses: bad}}))
		if werr == nil {
			t.Fatalf("initialize with harnesses %s succeeded, want an error", mustJSON(bad))
		}
		if !strings.Contains(werr.Message+string(werr.Data), "nosuch") {
			t.Errorf("initialize with harnesses %s: error %q %s does not name what was refused", mustJSON(bad), werr.Message, werr.Data)
		}
	}
	c.initialize(nil)
	rpctest.Must(c.Client, c.SessionList, schema.SessionListParams{})
	createFake(t, c)
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, c.stderr.String())
	}
}

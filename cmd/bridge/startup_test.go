package main

import (
	"strings"
	"testing"
)

// TestInitializeRetryAfterRefusedHarnessOptions: with --data-dir, serve
// opens the data directory and makes the adapters while initialize is being
// read. An initialize whose harness options are refused gets a clear error
// and leaves nothing half-open: a corrected initialize on the same
// connection succeeds and the service works.
func TestInitializeRetryAfterRefusedHarnessOptions(t *testing.T) {
	c := startBridge(t, t.TempDir())
	for _, bad := range []map[string]any{
		{"harnesses": map[string]any{"nosuch": map[string]any{}}},
		{"harnesses": map[string]any{"fake": map[string]any{"nosuchKey": true}}},
	} {
		werr := c.call("initialize", map[string]any{"capabilities": map[string]any{}, "initializationOptions": bad}, nil)
		if werr == nil {
			t.Fatalf("initialize with %v succeeded, want an error", bad)
		}
		if !strings.Contains(werr.Message+string(werr.Data), "nosuch") {
			t.Errorf("initialize with %v: error %q %s does not name what was refused", bad, werr.Message, werr.Data)
		}
	}
	c.initialize(nil)
	var list struct {
		Items []any `json:"items"`
	}
	c.MustCall("session/list", map[string]any{}, &list)
	createFake(t, c)
	if code := c.exit(true); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, c.stderr.String())
	}
}

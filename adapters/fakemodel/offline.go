package fakemodel

import (
	"context"
	"fmt"
	"time"
)

// CodexConfig is a $CODEX_HOME/config.toml that makes `codex` use the fake
// server at baseURL as its only provider, with no approvals, update checks
// or telemetry (reference/harness-offline.md §5). The API key is read from
// FAKE_API_KEY.
func CodexConfig(baseURL string) string {
	return fmt.Sprintf(`model = "fake-model"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake"
base_url = "%s/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
stream_max_retries = 0
request_max_retries = 0

[features]
plugins = false
apps = false
remote_plugin = false
in_app_updates = false

[analytics]
enabled = false

[feedback]
enabled = false
`, baseURL)
}

// AwaitRequests waits until the server has received at least n requests,
// or ctx ends.
func (s *Server) AwaitRequests(ctx context.Context, n int) error {
	for len(s.Requests()) < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("fakemodel: %d requests awaited, %d received: %w", n, len(s.Requests()), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

package service

import (
	"context"

	"github.com/bridge-dev/bridge/schema"
)

// HostedRequestPermission decides a permission request of a session the
// client hosts itself (sessions.HostedPermission): the same path as any
// harness's.
func (s *Service) HostedRequestPermission(ctx context.Context, p schema.HostedRequestPermissionParams) (schema.HostedRequestPermissionResult, error) {
	return s.sess.HostedPermission(ctx, p)
}

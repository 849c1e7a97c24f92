package rpc

import (
	"context"

	"github.com/bridge-dev/bridge/schema"
)

func (f *fakeBackend) SessionQueue(ctx context.Context, p schema.SessionQueueParams) (schema.SessionQueueResult, error) {
	return serve[schema.SessionQueueParams, schema.SessionQueueResult](f, ctx, p, nil)
}
func (f *fakeBackend) SessionWithdraw(ctx context.Context, p schema.SessionWithdrawParams) (schema.SessionWithdrawResult, error) {
	return serve[schema.SessionWithdrawParams, schema.SessionWithdrawResult](f, ctx, p, nil)
}
func (f *fakeBackend) SessionUsage(ctx context.Context, p schema.SessionUsageParams) (schema.SessionUsageResult, error) {
	return serve[schema.SessionUsageParams, schema.SessionUsageResult](f, ctx, p, nil)
}
func (f *fakeBackend) SessionDiff(ctx context.Context, p schema.SessionDiffParams) (schema.SessionDiffResult, error) {
	return serve[schema.SessionDiffParams, schema.SessionDiffResult](f, ctx, p, nil)
}

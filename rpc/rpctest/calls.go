package rpctest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/bridge-dev/bridge/schema"
)

// Do sends a request of method with params and decodes its result as R.
// An error reply is returned as an *Error. When ctx ends before the reply,
// the request is cancelled with $/cancelRequest (as a client does) and the
// reply still awaited. A transport failure or a reply that never comes
// (Options.ReplyWait) is an error of its own.
func Do[R any](ctx context.Context, c *Client, method string, params any) (R, error) {
	var r R
	id := c.NextID()
	c.Send(id, method, params)
	rawID := strconv.Itoa(id)
	m, err := c.wait(ctx, "the reply to "+method+" "+rawID, c.opts.ReplyWait,
		func() { c.Notify("$/cancelRequest", schema.CancelParams{ID: schema.RequestID{Num: int64(id)}}) },
		c.replyTo(rawID))
	if err != nil {
		return r, err
	}
	if m.Error != nil {
		return r, m.Error
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		return r, fmt.Errorf("%s: decoding result %s: %w", method, m.Result, err)
	}
	return r, nil
}

// Must runs call, a typed call of c (a method value such as
// c.SessionPrompt), with p under the test's context, and returns its
// result; an error reply or a failed call fails the test, naming the
// method. It is for the test's own goroutine, as t.Fatal is.
func Must[P, R any](c *Client, call func(context.Context, P) (R, error), p P) R {
	c.t.Helper()
	r, err := call(c.t.Context(), p)
	if err != nil {
		c.t.Fatalf("%s: %v", methodOf(p), err)
	}
	return r
}

// ErrorOf is the error reply of a typed call, for a test that expects
// one: rpctest.ErrorOf(c.SessionCreate(ctx, p)). It is nil when the call
// succeeded; a failure that is not an error reply (the transport, a result
// that does not decode) is an *Error of code 0 saying what it was.
func ErrorOf[R any](_ R, err error) *Error {
	if err == nil {
		return nil
	}
	if e := AsError(err); e != nil {
		return e
	}
	return &Error{Message: "not an error reply: " + err.Error()}
}

// methodOf names the contract row whose params type is P's.
func methodOf[P any](p P) string {
	for _, row := range schema.Methods() {
		if row.Params != nil && reflect.TypeOf(row.Params) == reflect.TypeOf(p) {
			return row.Name
		}
	}
	return fmt.Sprintf("%T", p)
}

// Initialize sends initialize; Initialized (its notification) follows it
// in a handshake.
func (c *Client) Initialize(ctx context.Context, p schema.InitializeParams) (schema.InitializeResult, error) {
	return Do[schema.InitializeResult](ctx, c, "initialize", p)
}

// Initialized sends the initialized notification.
func (c *Client) Initialized() { c.Notify("initialized", schema.InitializedParams{}) }

// Shutdown sends shutdown.
func (c *Client) Shutdown(ctx context.Context) error {
	_, err := Do[json.RawMessage](ctx, c, "shutdown", nil)
	return err
}

// Exit sends the exit notification.
func (c *Client) Exit() { c.Notify("exit", nil) }

var _ schema.Backend = (*Client)(nil)

// The client requests of the contract, one per Backend method.

func (c *Client) BridgeDoctor(ctx context.Context, p schema.DoctorParams) (schema.DoctorResult, error) {
	return Do[schema.DoctorResult](ctx, c, "bridge/doctor", p)
}

func (c *Client) SessionList(ctx context.Context, p schema.SessionListParams) (schema.SessionListResult, error) {
	return Do[schema.SessionListResult](ctx, c, "session/list", p)
}

func (c *Client) SessionCreate(ctx context.Context, p schema.SessionCreateParams) (schema.SessionCreateResult, error) {
	return Do[schema.SessionCreateResult](ctx, c, "session/create", p)
}
func (c *Client) SessionPrompt(ctx context.Context, p schema.SessionPromptParams) (schema.SessionPromptResult, error) {
	return Do[schema.SessionPromptResult](ctx, c, "session/prompt", p)
}
func (c *Client) SessionCancel(ctx context.Context, p schema.SessionCancelParams) (schema.SessionCancelResult, error) {
	return Do[schema.SessionCancelResult](ctx, c, "session/cancel", p)
}
func (c *Client) SessionRename(ctx context.Context, p schema.SessionRenameParams) (schema.SessionRenameResult, error) {
	return Do[schema.SessionRenameResult](ctx, c, "session/rename", p)
}
func (c *Client) SessionArchive(ctx context.Context, p schema.SessionArchiveParams) (schema.SessionArchiveResult, error) {
	return Do[schema.SessionArchiveResult](ctx, c, "session/archive", p)
}
func (c *Client) SessionHistory(ctx context.Context, p schema.SessionHistoryParams) (schema.SessionHistoryResult, error) {
	return Do[schema.SessionHistoryResult](ctx, c, "session/history", p)
}
func (c *Client) SessionResume(ctx context.Context, p schema.SessionResumeParams) (schema.SessionResumeResult, error) {
	return Do[schema.SessionResumeResult](ctx, c, "session/resume", p)
}
func (c *Client) SessionCompact(ctx context.Context, p schema.SessionCompactParams) (schema.SessionCompactResult, error) {
	return Do[schema.SessionCompactResult](ctx, c, "session/compact", p)
}
func (c *Client) SessionCheckpoint(ctx context.Context, p schema.SessionCheckpointParams) (schema.SessionCheckpointResult, error) {
	return Do[schema.SessionCheckpointResult](ctx, c, "session/checkpoint", p)
}
func (c *Client) SessionSuspend(ctx context.Context, p schema.SessionSuspendParams) (schema.SessionSuspendResult, error) {
	return Do[schema.SessionSuspendResult](ctx, c, "session/suspend", p)
}
func (c *Client) SessionImport(ctx context.Context, p schema.SessionImportParams) (schema.SessionImportResult, error) {
	return Do[schema.SessionImportResult](ctx, c, "session/import", p)
}
func (c *Client) SessionModels(ctx context.Context, p schema.SessionModelsParams) (schema.SessionModelsResult, error) {
	return Do[schema.SessionModelsResult](ctx, c, "session/models", p)
}
func (c *Client) SessionSelectModel(ctx context.Context, p schema.SessionSelectModelParams) (schema.SessionSelectModelResult, error) {
	return Do[schema.SessionSelectModelResult](ctx, c, "session/selectModel", p)
}
func (c *Client) HostedRequestPermission(ctx context.Context, p schema.HostedRequestPermissionParams) (schema.HostedRequestPermissionResult, error) {
	return Do[schema.HostedRequestPermissionResult](ctx, c, "hosted/requestPermission", p)
}
func (c *Client) SessionSearch(ctx context.Context, p schema.SessionSearchParams) (schema.SessionSearchResult, error) {
	return Do[schema.SessionSearchResult](ctx, c, "session/search", p)
}
func (c *Client) SessionExport(ctx context.Context, p schema.SessionExportParams) (schema.SessionExportResult, error) {
	return Do[schema.SessionExportResult](ctx, c, "session/export", p)
}
func (c *Client) SessionFork(ctx context.Context, p schema.SessionForkParams) (schema.SessionForkResult, error) {
	return Do[schema.SessionForkResult](ctx, c, "session/fork", p)
}
func (c *Client) MigrationPreview(ctx context.Context, p schema.MigrationPreviewParams) (schema.MigrationPreviewResult, error) {
	return Do[schema.MigrationPreviewResult](ctx, c, "migration/preview", p)
}
func (c *Client) MigrationExecute(ctx context.Context, p schema.MigrationExecuteParams) (schema.MigrationExecuteResult, error) {
	return Do[schema.MigrationExecuteResult](ctx, c, "migration/execute", p)
}
func (c *Client) SessionQueue(ctx context.Context, p schema.SessionQueueParams) (schema.SessionQueueResult, error) {
	return Do[schema.SessionQueueResult](ctx, c, "session/queue", p)
}
func (c *Client) SessionWithdraw(ctx context.Context, p schema.SessionWithdrawParams) (schema.SessionWithdrawResult, error) {
	return Do[schema.SessionWithdrawResult](ctx, c, "session/withdraw", p)
}
func (c *Client) SessionUsage(ctx context.Context, p schema.SessionUsageParams) (schema.SessionUsageResult, error) {
	return Do[schema.SessionUsageResult](ctx, c, "session/usage", p)
}
func (c *Client) SessionDiff(ctx context.Context, p schema.SessionDiffParams) (schema.SessionDiffResult, error) {
	return Do[schema.SessionDiffResult](ctx, c, "session/diff", p)
}

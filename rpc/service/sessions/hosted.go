package sessions

import (
	"context"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"github.com/bridge-dev/bridge/schema"
)

// HostedPermission decides a permission request of a session the
// client hosts itself: the same path as any harness's (recorded, the user
// asked or the preset's policy applied).
func (s *Sessions) HostedPermission(ctx context.Context, p schema.HostedRequestPermissionParams) (schema.HostedRequestPermissionResult, error) {
	if p.NativeID == "" {
		return schema.HostedRequestPermissionResult{}, core.InvalidField("nativeId", "nativeId is required")
	}
	if p.ToolCall.ToolCallID == "" {
		return schema.HostedRequestPermissionResult{}, core.InvalidField("toolCall.toolCallId", "toolCall.toolCallId is required")
	}
	req := core.ApprovalRequest{ID: p.ToolCall.ToolCallID, ToolCallID: p.ToolCall.ToolCallID, Title: p.ToolCall.Title,
		Kind: p.ToolCall.Kind, RawInput: p.ToolCall.RawInput, Key: "host:" + p.ToolCall.Kind}
	if req.Kind == "" {
		req.Key = "host:" + p.ToolCall.Title
	}
	seen := map[string]bool{}
	for i, o := range p.Options {
		switch o.Kind {
		case schema.AllowOnce, schema.AllowAlways, schema.RejectOnce, schema.RejectAlways:
		default:
			return schema.HostedRequestPermissionResult{}, core.InvalidField(fmt.Sprintf("options[%d].kind", i),
				"option kind %q is not allow_once, allow_always, reject_once or reject_always", o.Kind)
		}
		if o.OptionID == "" || seen[o.OptionID] {
			return schema.HostedRequestPermissionResult{}, core.InvalidField(fmt.Sprintf("options[%d].optionId", i), "option ids must be unique and non-empty")
		}
		seen[o.OptionID] = true
		req.Options = append(req.Options, core.ApprovalOption{ID: o.OptionID, Name: o.Name, Kind: o.Kind})
	}
	l := s.hostedLive(p.NativeID)
	if l == nil {
		return schema.HostedRequestPermissionResult{}, core.NotFound("live hosted session", p.NativeID)
	}
	d := l.Approve(ctx, req)
	if d.Cancelled {
		return schema.HostedRequestPermissionResult{Outcome: schema.PermissionOutcome{Outcome: schema.OutcomeCancelled}}, nil
	}
	return schema.HostedRequestPermissionResult{Outcome: schema.PermissionOutcome{Outcome: schema.OutcomeSelected, OptionID: d.OptionID}}, nil
}

// hostedLive is the live session, hosted by the client, whose native id is
// nativeID.
func (s *Sessions) hostedLive(nativeID string) *live.Session {
	for _, l := range s.opts.Lives.All() {
		if ch, ok := l.Host.(core.ClientHosted); ok && ch.ClientHosted() && l.Harness != nil && l.Harness.NativeID() == nativeID {
			return l
		}
	}
	return nil
}

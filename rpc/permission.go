package rpc

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// PermissionAsker returns the peer.PermissionAsker that relays a
// harness's permission request to the client as session/requestPermission
// through c. Give it to the service only when the client declared
// capabilities.session.requestPermission (InitOptions.RequestPermission).
func PermissionAsker(c Caller) peer.PermissionAsker { return permissionAsker{c} }

type permissionAsker struct{ c Caller }

// RequestPermission implements peer.PermissionAsker. When ctx ends first
// the Caller sends $/cancelRequest for the request.
func (a permissionAsker) RequestPermission(ctx context.Context, p peer.PermissionRequest) (string, error) {
	params := PermissionParams(p)
	var res schema.SessionRequestPermissionResult
	if err := a.c.Call(ctx, "session/requestPermission", params, &res); err != nil {
		return "", err
	}
	switch res.Outcome.Outcome {
	case schema.OutcomeCancelled:
		return "", nil
	case schema.OutcomeSelected:
		if res.Outcome.OptionID == "" {
			return "", core.Errorf(core.CodeInvalid, "session/requestPermission: outcome \"selected\" without an optionId")
		}
		return res.Outcome.OptionID, nil
	}
	return "", core.Errorf(core.CodeInvalid, "session/requestPermission: outcome %q is not \"selected\" or \"cancelled\"", res.Outcome.Outcome)
}

// PermissionParams is the wire shape of a permission request.
func PermissionParams(p peer.PermissionRequest) schema.SessionRequestPermissionParams {
	r := p.Request
	out := schema.SessionRequestPermissionParams{SessionID: p.SessionID,
		ToolCall: schema.PermissionToolCall{ToolCallID: r.ToolCallID, Title: r.Title, Kind: r.Kind, RawInput: r.RawInput},
		Options:  make([]schema.PermissionOption, 0, len(r.Options))}
	for _, o := range r.Options {
		out.Options = append(out.Options, schema.PermissionOption{OptionID: o.ID, Name: o.Name, Kind: schema.PermissionOptionKind(o.Kind)})
	}
	return out
}

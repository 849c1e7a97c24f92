package adaptertest

import (
	"context"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// approvalKinds are the tool kinds a request may name (ACP's).
var approvalKinds = map[string]bool{"read": true, "edit": true, "delete": true, "move": true, "search": true,
	"execute": true, "think": true, "fetch": true, "switch_mode": true, "other": true}

// checkApprovals runs the approvals part of the suite: when approval.relay
// is claimed, a turn that needs a permission asks the session's approver,
// whose "allow once" ends the turn normally and "reject once" ends it
// without an error, with a request that is well formed. An adapter that does not claim it must not
// call the approver.
func (s *suite) testApprovals(t *testing.T) {
	e := s.setup(t)
	if !needLive(t, e) {
		return
	}
	claimed := e.claims[core.CapApprovalRelay]
	if s.h.Approval == nil {
		if claimed {
			t.Fatalf("%s is claimed available, but Harness.Approval gives the suite no way to make the harness ask", core.CapApprovalRelay)
		}
		return
	}
	for _, kind := range []core.ApprovalOptionKind{core.AllowOnce, core.RejectOnce} {
		t.Run(string(kind), func(t *testing.T) {
			var mu sync.Mutex
			var asked []core.ApprovalRequest
			var answered []core.ApprovalDecision
			req := s.request(t)
			req.Approve = func(ctx context.Context, r core.ApprovalRequest) core.ApprovalDecision {
				d := core.PolicyDecision(core.Preset{}, r, core.DecidedByUser, "")
				opts := r.Options
				if len(opts) == 0 {
					opts = core.DefaultApprovalOptions()
				}
				for _, o := range opts {
					if o.Kind == kind {
						d = core.ApprovalDecision{OptionID: o.ID, Kind: o.Kind, By: core.DecidedByUser}
						break
					}
				}
				mu.Lock()
				asked = append(asked, r)
				answered = append(answered, d)
				mu.Unlock()
				return d
			}
			rec := newRecorder()
			live, err := e.host.CreateSession(e.ctx, req, rec.sink)
			if err != nil {
				t.Fatalf("CreateSession: %v", err)
			}
			t.Cleanup(func() { closeLive(live) })
			content := s.h.Approval(t)
			res, err := live.Prompt(e.ctx, content)
			mu.Lock()
			defer mu.Unlock()
			if !claimed {
				if len(asked) > 0 {
					t.Errorf("%s is claimed unavailable, but the approver was asked %d times", core.CapApprovalRelay, len(asked))
				}
				return
			}
			if err != nil {
				t.Fatalf("Prompt after %s: %v", kind, err)
			}
			// A refusal may end the harness's loop early (OpenCode stops
			// at a rejected permission): any stop but an error.
			if (kind == core.AllowOnce && res.StopReason != "end_turn") || res.StopReason == "error" || res.StopReason == "" {
				t.Errorf("Prompt after %s: stop reason %q", kind, res.StopReason)
			}
			if len(asked) == 0 {
				t.Fatalf("%s is claimed available, but the turn never asked the approver (the tool ran or was refused without asking)", core.CapApprovalRelay)
			}
			for i, r := range asked {
				checkApprovalRequest(t, r)
				if answered[i].Kind != kind {
					t.Errorf("the request offered no %s option: %+v", kind, r.Options)
				}
			}
			checkEntries(t, rec)
		})
	}
}

// checkApprovalRequest fails a malformed permission request.
func checkApprovalRequest(t *testing.T, r core.ApprovalRequest) {
	t.Helper()
	if r.ID == "" && r.ToolCallID == "" {
		t.Errorf("approval request without an id or a tool call id: %+v", r)
	}
	if r.Kind != "" && !approvalKinds[r.Kind] {
		t.Errorf("approval request kind %q is not one of ACP's tool kinds", r.Kind)
	}
	ids := map[string]bool{}
	for _, o := range r.Options {
		switch o.Kind {
		case core.AllowOnce, core.AllowAlways, core.RejectOnce, core.RejectAlways:
		default:
			t.Errorf("approval option %q has kind %q", o.ID, o.Kind)
		}
		if o.ID == "" || ids[o.ID] {
			t.Errorf("approval option ids must be unique and non-empty: %+v", r.Options)
		}
		ids[o.ID] = true
	}
}

// checkEntries fails invalid entries and shared NativeIDs.
func checkEntries(t *testing.T, rec *recorder) {
	t.Helper()
	seen := map[string]bool{}
	for _, en := range rec.entries() {
		if err := en.Validate(); err != nil {
			t.Errorf("invalid %s entry: %v", en.Kind, err)
		}
		if en.NativeID != "" && seen[en.NativeID] {
			t.Errorf("entries share NativeID %q", en.NativeID)
		}
		seen[en.NativeID] = true
	}
}

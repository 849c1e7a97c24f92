package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// listStatus is the status session/list gives the session.
func listStatus(t *testing.T, r *rig, id string) schema.SessionStatus {
	t.Helper()
	res, err := r.svc.SessionList(context.Background(), schema.SessionListParams{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res.Items {
		if x.SessionID == id {
			return x.Status
		}
	}
	t.Fatalf("session %s is not listed", id)
	return ""
}

// TestSessionListStatus: the list says live while the harness process runs
// in the service, suspended after a suspension, live again once prompted,
// ended after the process exits on its own; another service over the same
// record (another Bridge process) says what was recorded, and idle for a
// session that never stopped in its knowledge.
func TestSessionListStatus(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		r := newRig(t, rigOptions{open: open})
		a, b, c := r.create(), r.create(), r.create()
		for _, s := range []core.Session{a, b, c} {
			if got := listStatus(t, r, s.ID); got != schema.StatusLive {
				t.Fatalf("a new session is %q, want live", got)
			}
		}
		r.prompt(a.ID, "say working\n"+cpReply("STATUS-1"))
		if out, err := suspendOf(r, a.ID); err != nil || !out.Suspended {
			t.Fatalf("Suspend = %+v, %v", out, err)
		}
		if got := listStatus(t, r, a.ID); got != schema.StatusSuspended {
			t.Fatalf("after the suspension: %q", got)
		}
		r.prompt(a.ID, "say back")
		if got := listStatus(t, r, a.ID); got != schema.StatusLive {
			t.Fatalf("prompted after the suspension: %q", got)
		}
		if out, err := suspendOf(r, a.ID); err != nil || !out.Suspended {
			t.Fatalf("second Suspend = %+v, %v", out, err)
		}
		_, err := r.svc.SessionPrompt(context.Background(), schema.SessionPromptParams{SessionID: b.ID,
			Content: []schema.Content{{Type: "text", Text: "crash 3"}}})
		if err == nil {
			t.Fatal("the crashing turn did not fail")
		}
		r.rec.Await(t, "the stop to be recorded", func() bool {
			for _, e := range r.rec.Entries {
				if e.SessionID == b.ID && e.Kind == core.KindSessionStatus && strings.Contains(string(e.Payload), `"stopped"`) {
					return true
				}
			}
			return false
		})
		if got := listStatus(t, r, b.ID); got != schema.StatusEnded {
			t.Fatalf("after the process exited: %q", got)
		}

		other := newRig(t, rigOptions{db: r.db})
		for _, w := range []struct {
			id   string
			want schema.SessionStatus
		}{{a.ID, schema.StatusSuspended}, {b.ID, schema.StatusEnded}, {c.ID, schema.StatusIdle}} {
			if got := listStatus(t, other, w.id); got != w.want {
				t.Errorf("another service says %s is %q, want %q", w.id, got, w.want)
			}
		}
	})
}

package service_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

func selectModel(r *rig, id, model, effort string) (schema.SessionSelectModelResult, error) {
	return r.svc.SessionSelectModel(context.Background(), schema.SessionSelectModelParams{SessionID: id, Model: model, Effort: effort})
}

func TestSessionModelsListsContextWindows(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	res, err := r.svc.SessionModels(context.Background(), schema.SessionModelsParams{SessionID: s.ID})
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != "fake-large" || res.Effort != "high" || len(res.Models) != 2 ||
		res.Models[0].ID != "fake-small" || res.Models[0].ContextWindow != 100000 || res.Models[1].ContextWindow != 200000 {
		t.Fatalf("session/models = %+v", res)
	}
}

func TestSelectModelDowngradeCheckpointsFirst(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		for _, tc := range []struct {
			name, model, effort string
		}{
			{"smaller window", "fake-small", ""},
			{"lower effort", "", "low"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := newRig(t, rigOptions{open: open})
				s := r.create()
				r.prompt(s.ID, "say did some work\nfile src/main.go\nnext json {\"summary\": \"before the downgrade\"}")
				res, err := selectModel(r, s.ID, tc.model, tc.effort)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Downgrade || res.CheckpointEntryID == "" {
					t.Fatalf("result %+v: want a downgrade with a checkpoint", res)
				}
				b := r.branch(s.ID)
				ks := kinds(b)
				cp, changed := -1, -1
				for i, e := range b {
					switch {
					case e.Kind == core.KindCheckpoint && payload(t, e)["reason"] == "before_downgrade":
						cp = i
						if e.ID != res.CheckpointEntryID {
							t.Errorf("checkpoint entry %s, result names %s", e.ID, res.CheckpointEntryID)
						}
					case e.Kind == core.KindModelChanged || e.Kind == core.KindEffortChanged:
						changed = i
					}
				}
				if cp < 0 || changed < 0 || cp > changed {
					t.Fatalf("record %v: want the before_downgrade checkpoint before the change", ks)
				}
				p := payload(t, b[changed])
				if tc.model != "" && (p["model"] != "fake-small" || p["from"] != "fake-large" || p["downgrade"] != true) {
					t.Errorf("model.changed %v", p)
				}
				if tc.effort != "" && (p["effort"] != "low" || p["from"] != "high") {
					t.Errorf("effort.changed %v", p)
				}
				sess, _ := r.db.GetSession(context.Background(), s.ID)
				if (tc.model != "" && sess.Model != "fake-small") || (tc.effort != "" && sess.Effort != "low") {
					t.Errorf("session head %s/%s", sess.Model, sess.Effort)
				}
			})
		}
	})
}

func TestSelectModelUpgradeWritesNoCheckpoint(t *testing.T) {
	r := newRig(t, rigOptions{})
	cr, err := r.svc.SessionCreate(context.Background(), schema.SessionCreateParams{Harness: "fake", Cwd: t.TempDir(), Model: "fake-small", Effort: "low"})
	if err != nil {
		t.Fatal(err)
	}
	r.prompt(cr.SessionID, "say work\nfile src/a.go")
	before := len(r.branch(cr.SessionID))
	res, err := selectModel(r, cr.SessionID, "fake-large", "high")
	if err != nil {
		t.Fatal(err)
	}
	b := r.branch(cr.SessionID)[before:]
	if res.Downgrade || res.CheckpointEntryID != "" || len(b) != 2 || b[0].Kind != core.KindModelChanged || b[1].Kind != core.KindEffortChanged {
		t.Fatalf("upgrade: %+v, new entries %v", res, kinds(b))
	}
}

func TestSelectModelSuppressedCheckpointIsReported(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	// No meaningful work yet: the decision suppresses the checkpoint; the
	// switch still happens and says why.
	res, err := selectModel(r, s.ID, "", "low")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Downgrade || res.CheckpointEntryID != "" || res.CheckpointNote == "" || res.Effort != "low" {
		t.Fatalf("result %+v", res)
	}
}

func TestSelectModelUnavailableChangesNothing(t *testing.T) {
	r := newRig(t, rigOptions{fake: fake.Options{Missing: []string{core.CapSessionSelect}}})
	s := r.create()
	r.prompt(s.ID, "say work")
	before := kinds(r.branch(s.ID))
	_, err := selectModel(r, s.ID, "fake-small", "low")
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != core.CodeUnavailable {
		t.Fatalf("select on a harness that cannot switch: %v", err)
	}
	after := kinds(r.branch(s.ID))
	if len(after) != len(before) {
		t.Errorf("record changed: %v -> %v", before, after)
	}
	sess, _ := r.db.GetSession(context.Background(), s.ID)
	if sess.Model != "fake-large" || sess.Effort != "high" {
		t.Errorf("session head changed: %s/%s", sess.Model, sess.Effort)
	}
}

func TestSelectModelRefusesBadInput(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	for _, c := range [][2]string{{"", ""}, {"", "ludicrous"}} {
		_, err := selectModel(r, s.ID, c[0], c[1])
		var ce *core.Error
		if !errors.As(err, &ce) || ce.Code != core.CodeInvalid {
			t.Errorf("%q/%q: %v", c[0], c[1], err)
		}
	}
}

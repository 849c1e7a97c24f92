package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// TestContractRefusesBadValues checks that values the contract does not
// allow are refused as invalid input naming the field, before anything
// changes.
func TestContractRefusesBadValues(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	ctx := context.Background()
	neg := int64(-1)
	cases := []struct {
		name  string
		call  func() error
		field string
		msg   string
	}{
		{"content type", func() error {
			_, err := r.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.ID, Content: []schema.Content{{Type: "video"}}})
			return err
		}, "content[0].type", `"video"`},
		{"no content", func() error {
			_, err := r.svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.ID})
			return err
		}, "content", "at least one block"},
		{"resume mode", func() error {
			_, err := r.svc.SessionResume(ctx, schema.SessionResumeParams{SessionID: s.ID, Mode: "hot"})
			return err
		}, "mode", `mode "hot"`},
		{"checkpoint reason", func() error {
			_, err := r.svc.SessionCheckpoint(ctx, schema.SessionCheckpointParams{SessionID: s.ID, Reason: "bored"})
			return err
		}, "reason", `reason "bored"`},
		{"list limit", func() error {
			_, err := r.svc.SessionList(ctx, schema.SessionListParams{Limit: -1})
			return err
		}, "limit", "limit"},
		{"history beforeSeq", func() error {
			_, err := r.svc.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: s.ID, BeforeSeq: &neg})
			return err
		}, "beforeSeq", "beforeSeq"},
		{"preview lang", func() error {
			_, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: s.ID, Target: schema.MigrationTarget{Model: "fake-small"}, Lang: "fr"})
			return err
		}, "lang", `"fr"`},
	}
	for _, tc := range cases {
		err := tc.call()
		var ce *core.Error
		if core.ErrorCode(err) != core.CodeInvalid || !asError(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v (field %q); want invalid naming field %q and %q", tc.name, err, fieldOf(ce), tc.field, tc.msg)
		}
	}
}

func asError(err error, ce **core.Error) bool { return errors.As(err, ce) }

func fieldOf(ce *core.Error) string {
	if ce == nil {
		return ""
	}
	return ce.Field
}

// TestEntryIDsSortBySeq: the ids of a session's entries, made by the
// service and by the store from one generator, sort as the entries were
// recorded.
func TestEntryIDsSortBySeq(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		r := newRig(t, rigOptions{open: open})
		s := r.create()
		r.prompt(s.ID, "stream 30")
		r.prompt(s.ID, "say done")
		branch := r.branch(s.ID)
		if len(branch) < 30 {
			t.Fatalf("%d entries", len(branch))
		}
		for i := 1; i < len(branch); i++ {
			if branch[i].ID <= branch[i-1].ID {
				t.Fatalf("entry seq %d id %s sorts before seq %d id %s", branch[i].Seq, branch[i].ID, branch[i-1].Seq, branch[i-1].ID)
			}
		}
		if s.ID[:2] != "s_" || branch[0].ID[:2] != "e_" {
			t.Fatalf("prefixes: %s %s", s.ID, branch[0].ID)
		}
	})
}

// hiding wraps a host, hiding its optional interfaces (NativeResumer,
// AttachmentSource) while its probe still claims them.
type hiding struct{ core.BridgeHost }

// TestCapabilityNeedsTheImplementation: a capability is available only
// when the adapter implements it and its probe confirms it.
func TestCapabilityNeedsTheImplementation(t *testing.T) {
	h := fake.New(fake.Options{})
	if !h.Probe(context.Background()).Has(core.CapNativeResume) {
		t.Fatal("the fake's probe does not claim native.resume")
	}
	for _, c := range []struct {
		host core.BridgeHost
		want bool
	}{{h, true}, {hiding{h}, false}} {
		svc, err := service.New(service.Options{Store: storagetest.Open(t), Hosts: []core.BridgeHost{c.host}, Notifier: servicetest.NewRecorder()})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := svc.BridgeDoctor(context.Background(), schema.DoctorParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cp := range rep.Adapters[0].Capabilities {
			if cp.Name == core.CapNativeResume && cp.Available != c.want {
				t.Errorf("%T: native.resume available %v, want %v (%s)", c.host, cp.Available, c.want, cp.Detail)
			}
		}
		svc.Close(context.Background())
	}
}

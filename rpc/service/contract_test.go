package service_test

import (
	"context"
	"errors"
	"fmt"
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

// TestSessionHistoryAroundAndForwards: session/history opens a page around
// an entry deep in a long session and pages forwards from it to the head
// and backwards to the root, on both stores; the old requests keep their
// result (no hasNewer), and bad combinations and entries are refused naming
// the field.
func TestSessionHistoryAroundAndForwards(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		r := newRig(t, rigOptions{open: open})
		ctx := context.Background()
		s := r.create()
		var batch []core.NewEntry
		for i := range 400 {
			batch = append(batch, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(core.UserMessagePayload{Text: fmt.Sprintf("u%d", i)})},
				core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(core.AssistantMessagePayload{Text: fmt.Sprintf("a%d", i)})})
		}
		es, err := r.db.Append(ctx, s.ID, batch...)
		if err != nil {
			t.Fatal(err)
		}
		hit := es[101] // a50
		page, err := r.svc.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: s.ID, Around: hit.ID, MaxMessages: 20})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Entries) != 20 || page.Entries[9].ID != hit.ID || !page.HasMore || page.HasNewer == nil || !*page.HasNewer {
			t.Fatalf("around a50: %d entries, [9] %s (want %s), hasMore %v, hasNewer %v", len(page.Entries), page.Entries[9].ID, hit.ID, page.HasMore, page.HasNewer)
		}
		// Forwards to the head, then nothing newer.
		seen := len(page.Entries)
		after := page.Entries[len(page.Entries)-1].Seq
		for pages := 0; ; pages++ {
			p, err := r.svc.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: s.ID, AfterSeq: &after, MaxMessages: 50})
			if err != nil {
				t.Fatal(err)
			}
			if p.HasNewer == nil || len(p.Entries) == 0 || !p.HasMore || pages > 20 {
				t.Fatalf("forward page %d: %d entries, hasNewer %v, hasMore %v", pages, len(p.Entries), p.HasNewer, p.HasMore)
			}
			if p.Entries[0].Seq != after+1 {
				t.Fatalf("forward page starts at seq %d, want %d", p.Entries[0].Seq, after+1)
			}
			seen += len(p.Entries)
			after = p.Entries[len(p.Entries)-1].Seq
			if !*p.HasNewer {
				break
			}
		}
		if after != es[len(es)-1].Seq {
			t.Fatalf("forward paging ended at seq %d, the head is %d", after, es[len(es)-1].Seq)
		}
		// Backwards from the page's first entry, as before.
		before := page.Entries[0].Seq
		for {
			p, err := r.svc.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: s.ID, BeforeSeq: &before, MaxMessages: 50})
			if err != nil {
				t.Fatal(err)
			}
			if p.HasNewer != nil {
				t.Fatalf("a backwards page says hasNewer %v", *p.HasNewer)
			}
			seen += len(p.Entries)
			if !p.HasMore {
				break
			}
			before = p.Entries[0].Seq
		}
		if seen != len(es) {
			t.Fatalf("paging from the hit both ways read %d entries, the session has %d", seen, len(es))
		}
		// From the root: afterSeq 0.
		zero := int64(0)
		if p, err := r.svc.SessionHistory(ctx, schema.SessionHistoryParams{SessionID: s.ID, AfterSeq: &zero, MaxMessages: 2}); err != nil ||
			len(p.Entries) != 2 || p.Entries[0].ID != es[0].ID || p.HasMore || !*p.HasNewer {
			t.Fatalf("from the root: %+v, %v", p, err)
		}

		other := r.create()
		elsewhere, err := r.db.Append(ctx, other.ID, core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(core.UserMessagePayload{Text: "x"})})
		if err != nil {
			t.Fatal(err)
		}
		seq := int64(3)
		for _, c := range []struct {
			name  string
			p     schema.SessionHistoryParams
			code  core.Code
			field string
			msg   string
		}{
			{"around and beforeSeq", schema.SessionHistoryParams{SessionID: s.ID, Around: hit.ID, BeforeSeq: &seq}, core.CodeInvalid, "around", "cannot be given together"},
			{"afterSeq and beforeSeq", schema.SessionHistoryParams{SessionID: s.ID, AfterSeq: &seq, BeforeSeq: &seq}, core.CodeInvalid, "afterSeq", "cannot be given together"},
			{"around and afterSeq", schema.SessionHistoryParams{SessionID: s.ID, Around: hit.ID, AfterSeq: &seq}, core.CodeInvalid, "around", "cannot be given together"},
			{"unknown entry", schema.SessionHistoryParams{SessionID: s.ID, Around: "e_missing"}, core.CodeNotFound, "", `entry "e_missing" not found`},
			{"another session's entry", schema.SessionHistoryParams{SessionID: s.ID, Around: elsewhere[0].ID}, core.CodeInvalid, "around", "belongs to session " + other.ID},
			{"unknown session", schema.SessionHistoryParams{SessionID: "s_missing", Around: hit.ID}, core.CodeNotFound, "", "s_missing"},
		} {
			_, err := r.svc.SessionHistory(ctx, c.p)
			var ce *core.Error
			if core.ErrorCode(err) != c.code || !asError(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%s: %v (field %q); want %s naming field %q and %q", c.name, err, fieldOf(ce), c.code, c.field, c.msg)
			}
		}
	})
}

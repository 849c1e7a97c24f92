package service_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

// asker is a scripted client: answer decides each request (nil: wait until
// the request is cancelled, like a user who never answers).
type asker struct {
	mu        sync.Mutex
	asked     []service.PermissionRequest
	answer    func(service.PermissionRequest) (string, error)
	waiting   chan struct{} // receives once per request that waits
	cancelled chan error    // the cause of each cancelled wait
}

func newAsker(answer func(service.PermissionRequest) (string, error)) *asker {
	return &asker{answer: answer, waiting: make(chan struct{}, 8), cancelled: make(chan error, 8)}
}

func (a *asker) RequestPermission(ctx context.Context, p service.PermissionRequest) (string, error) {
	a.mu.Lock()
	a.asked = append(a.asked, p)
	a.mu.Unlock()
	if a.answer != nil {
		return a.answer(p)
	}
	a.waiting <- struct{}{}
	<-ctx.Done()
	a.cancelled <- ctx.Err()
	return "", ctx.Err()
}

func (a *asker) requests() []service.PermissionRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]service.PermissionRequest(nil), a.asked...)
}

// approvalEntries returns the payloads of the approval and tool entries.
func promptParams(id, text string) schema.SessionPromptParams {
	return schema.SessionPromptParams{SessionID: id, Content: []schema.Content{{Type: "text", Text: text}}}
}

func approvalEntries(t *testing.T, r *rig, sid string) (req, res, tools []map[string]any) {
	t.Helper()
	for _, e := range r.branch(sid) {
		switch e.Kind {
		case core.KindApprovalRequested:
			req = append(req, payload(t, e))
		case core.KindApprovalResolved:
			res = append(res, payload(t, e))
		case core.KindToolCompleted:
			tools = append(tools, payload(t, e))
		}
	}
	return req, res, tools
}

func TestApprovalWithoutCapabilityIsThePolicysReject(t *testing.T) {
	r := newRig(t, rigOptions{})
	s := r.create()
	r.prompt(s.ID, "ask Bash rm -rf build")
	req, res, tools := approvalEntries(t, r, s.ID)
	if len(req) != 1 || req[0]["kind"] != "execute" || req[0]["title"] != "Bash: rm -rf build" || req[0]["harness"] != "fake" {
		t.Fatalf("approval.requested %v", req)
	}
	if len(res) != 1 || res[0]["by"] != string(core.DecidedByPolicy) || res[0]["allowed"] != false || res[0]["optionKind"] != string(core.RejectOnce) ||
		!strings.Contains(res[0]["reason"].(string), "requestPermission") || res[0]["approvalId"] != req[0]["approvalId"] {
		t.Fatalf("approval.resolved %v", res)
	}
	if len(tools) != 1 || tools[0]["isError"] != true {
		t.Fatalf("the harness did not see a refusal: %v", tools)
	}
}

func TestApprovalAllowOnceAsksTheClient(t *testing.T) {
	a := newAsker(func(p service.PermissionRequest) (string, error) { return string(core.AllowOnce), nil })
	r := newRig(t, rigOptions{permissions: a})
	s := r.create()
	r.prompt(s.ID, "ask Bash make test\nask Bash make test")
	asked := a.requests()
	if len(asked) != 2 {
		t.Fatalf("client asked %d times, want 2 (allow once is not remembered)", len(asked))
	}
	p := asked[0]
	if p.SessionID != s.ID || p.Request.ToolCallID == "" || p.Request.Kind != "execute" || len(p.Request.Options) != 4 ||
		!strings.Contains(string(p.Request.RawInput), "make test") {
		t.Errorf("request %+v", p)
	}
	_, res, tools := approvalEntries(t, r, s.ID)
	if len(res) != 2 || res[0]["by"] != string(core.DecidedByUser) || res[0]["allowed"] != true || res[0]["optionId"] != string(core.AllowOnce) {
		t.Fatalf("approval.resolved %v", res)
	}
	if len(tools) != 2 || tools[0]["isError"] == true {
		t.Fatalf("tool results %v", tools)
	}
}

func TestApprovalAllowAlwaysIsRememberedForTheSession(t *testing.T) {
	a := newAsker(func(p service.PermissionRequest) (string, error) { return string(core.AllowAlways), nil })
	r := newRig(t, rigOptions{permissions: a})
	s := r.create()
	r.prompt(s.ID, "ask Bash make test\nask Bash make lint\nask Write notes.md")
	if n := len(a.requests()); n != 2 {
		t.Fatalf("client asked %d times, want 2 (Bash once, then Write)", n)
	}
	_, res, tools := approvalEntries(t, r, s.ID)
	if len(res) != 3 || res[1]["remembered"] != true || res[1]["by"] != string(core.DecidedByUser) || res[1]["allowed"] != true ||
		res[0]["remembered"] != nil || res[0]["optionKind"] != string(core.AllowAlways) {
		t.Fatalf("approval.resolved %v", res)
	}
	for _, x := range tools {
		if x["isError"] == true {
			t.Errorf("tool refused: %v", x)
		}
	}
	// Another session does not inherit it.
	s2 := r.create()
	r.prompt(s2.ID, "ask Bash make test")
	if n := len(a.requests()); n != 3 {
		t.Fatalf("a new session used the other's allow-always (%d requests)", n)
	}
}

func TestApprovalClientErrorFallsBackToThePolicy(t *testing.T) {
	a := newAsker(func(p service.PermissionRequest) (string, error) { return "", errors.New("method not found") })
	r := newRig(t, rigOptions{permissions: a})
	s := r.create()
	r.prompt(s.ID, "ask Bash ls")
	_, res, tools := approvalEntries(t, r, s.ID)
	if len(res) != 1 || res[0]["by"] != string(core.DecidedByPolicy) || res[0]["allowed"] != false ||
		!strings.Contains(res[0]["reason"].(string), "method not found") {
		t.Fatalf("approval.resolved %v", res)
	}
	if tools[0]["isError"] != true {
		t.Fatalf("tool %v", tools)
	}
}

func TestApprovalUnknownOptionOrCancelledOutcomeIsThePolicy(t *testing.T) {
	for _, answer := range []string{"", "allow_everything"} {
		a := newAsker(func(p service.PermissionRequest) (string, error) { return answer, nil })
		r := newRig(t, rigOptions{permissions: a})
		s := r.create()
		r.prompt(s.ID, "ask Bash ls")
		_, res, _ := approvalEntries(t, r, s.ID)
		if len(res) != 1 || res[0]["by"] != string(core.DecidedByPolicy) || res[0]["allowed"] != false {
			t.Errorf("answer %q: approval.resolved %v", answer, res)
		}
	}
}

func TestApprovalTimeoutAppliesThePresetsPolicy(t *testing.T) {
	a := newAsker(nil) // never answers
	presets := []core.Preset{{Name: "trusting", Harness: "fake", ApprovalPolicy: "approve"}}
	r := newRig(t, rigOptions{permissions: a, approvalTimeout: 1, presets: presets})
	cr, err := r.svc.SessionCreate(context.Background(), schema.SessionCreateParams{Harness: "fake", Cwd: t.TempDir(), Preset: "trusting"})
	if err != nil {
		t.Fatal(err)
	}
	r.prompt(cr.SessionID, "ask Bash ls")
	_, res, tools := approvalEntries(t, r, cr.SessionID)
	if len(res) != 1 || res[0]["by"] != string(core.DecidedByTimeout) || res[0]["allowed"] != true || res[0]["optionKind"] != string(core.AllowOnce) {
		t.Fatalf("approval.resolved %v", res)
	}
	if tools[0]["isError"] == true {
		t.Fatalf("the preset's approve policy did not let the tool run: %v", tools)
	}
	if err := <-a.cancelled; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the client's request ended with %v, want the deadline", err)
	}
}

func TestApprovalPendingSuppressesCheckpointsAndCancelRejects(t *testing.T) {
	a := newAsker(nil)
	r := newRig(t, rigOptions{permissions: a})
	s := r.create()
	r.prompt(s.ID, "say some work first")
	type out struct {
		res schema.SessionPromptResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := r.svc.SessionPrompt(context.Background(), promptParams(s.ID, "ask Bash deploy"))
		done <- out{res, err}
	}()
	<-a.waiting
	// approval.requested is recorded while the client is asked (through
	// the session's event queue, so it may take a moment).
	r.rec.Await(t, "approval.requested", func() bool {
		req, _, _ := approvalEntries(t, r, s.ID)
		return len(req) == 1
	})
	if _, res, _ := approvalEntries(t, r, s.ID); len(res) != 0 {
		t.Fatalf("resolved while pending: %v", res)
	}
	_, err := r.svc.SessionCheckpoint(context.Background(), schema.SessionCheckpointParams{SessionID: s.ID, Reason: checkpoint.ReasonManual})
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != core.CodeBusy || !strings.Contains(ce.Message, "approval") {
		t.Fatalf("checkpoint while an approval is pending: %v", err)
	}
	if _, err := r.svc.SessionCancel(context.Background(), schema.SessionCancelParams{SessionID: s.ID}); err != nil {
		t.Fatal(err)
	}
	if err := <-a.cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("the client's request ended with %v, want cancelled", err)
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("prompt: %v", o.err)
	}
	// A cancelled turn is answered at once and its backlog (the
	// approval.resolved among it) is recorded after the answer (see
	// cancelmute.go): wait for it.
	r.rec.Await(t, "approval.resolved", func() bool {
		_, res, _ := approvalEntries(t, r, s.ID)
		return len(res) > 0
	})
	_, res, tools := approvalEntries(t, r, s.ID)
	if len(res) != 1 || res[0]["by"] != string(core.DecidedByPolicy) || res[0]["allowed"] != false ||
		!strings.Contains(res[0]["reason"].(string), "cancelled") {
		t.Fatalf("approval.resolved %v", res)
	}
	for _, x := range tools {
		if strings.Contains(x["output"].(string), "deploy") && x["isError"] != true {
			t.Errorf("a tool ran after its turn was cancelled: %v", x)
		}
	}
}

func TestApprovalClosedSessionRejects(t *testing.T) {
	a := newAsker(nil)
	r := newRig(t, rigOptions{permissions: a})
	s := r.create()
	go r.svc.SessionPrompt(context.Background(), promptParams(s.ID, "ask Bash deploy"))
	<-a.waiting
	if err := r.svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-a.cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("the client's request ended with %v", err)
	}
}

package adaptertest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Harness describes the adapter under test to Run. Only New is required.
//
// Example, for an adapter driving a real program against the fake model
// server:
//
//	func TestConformance(t *testing.T) {
//		bin := adaptertest.FindBinary(t, "claude")
//		var srv *fakemodel.Server
//		adaptertest.Run(t, adaptertest.Harness{
//			New: func(t *testing.T) core.BridgeHost {
//				srv = startModelServer(t) // fakemodel.Start + t.Cleanup(srv.Close)
//				return claudecode.New(claudecode.Options{Binary: bin, BaseURL: srv.URL, Home: t.TempDir()})
//			},
//			Script: func(t *testing.T) { srv.Enqueue(fakemodel.Reply{Text: "hello"}) },
//			ScriptCompaction: func(t *testing.T) { srv.Enqueue(fakemodel.Reply{Text: "summary"}) },
//			Claims: []string{core.CapSessionList, core.CapSessionCreate, …},
//		})
//	}
type Harness struct {
	// New returns a fresh host; it is called once per subtest. Start what
	// the host needs here (fake model server, temporary HOME) and register
	// its teardown with t.Cleanup.
	New func(t *testing.T) core.BridgeHost
	// Cwd returns the working directory sessions are created in
	// (nil: t.TempDir()).
	Cwd func(t *testing.T) string
	// Request, when set, adjusts the CreateRequest of every session the
	// suite creates (preset, model…); Cwd is already filled in.
	Request func(t *testing.T, req *core.CreateRequest)
	// Prompt is what the suite sends to make the harness answer
	// (nil: a single text block "hello").
	Prompt []core.Content
	// Script is called before every prompt the suite sends, so the test can
	// script the model's answer (nil: the harness answers by itself, as the
	// fake adapter does).
	Script func(t *testing.T)
	// ScriptCompaction is called before the suite asks for a compaction
	// (when compaction.command is claimed), to script the summary.
	ScriptCompaction func(t *testing.T)
	// Expect, when set, receives the entries of a prompt turn for
	// adapter-specific checks (after the suite's own).
	Expect func(t *testing.T, entries []core.NewEntry)
	// Claims lists exactly the capabilities the adapter must report as
	// available. nil takes Probe's word, which is then still checked for
	// truthfulness. Set it: it is how a capability silently lost fails.
	Claims []string
	// Approval, when approval.relay is claimed, scripts a turn that needs a
	// permission (a tool call the harness asks about) and returns the
	// prompt to send; it is called once per turn (allow once, reject once).
	Approval func(t *testing.T) []core.Content
	// ReportsModel is true when the adapter reports the model it runs
	// (core.Event.Model) under the id SelectModel was given: the suite then
	// checks a switch really happened.
	ReportsModel bool
	// Timeout bounds each subtest's calls so that a hang fails instead of
	// blocking the run; it guards, it does not measure (default 3 minutes).
	Timeout time.Duration
}

// Run runs the conformance suite every adapter passes:
//
//   - probe: Probe lists every capability (core.Capabilities) once, with
//     a detail for each unavailable one,
//     nothing else, and exactly Claims as available; it also answers with
//     a cancelled context.
//   - host-calls: each host-level capability claimed available works
//     (Models, Presets, Workspaces, ListSessions) and each claimed
//     unavailable (those, History, ArchiveSession, Attachment, Resume,
//     CreateSession) is refused with an error wrapping core.ErrUnsupported.
//   - session-calls: on a live session, History, goals (create, pause,
//     clear), compaction (focus applied or a note saying why not, and a
//     context.compacted entry), Rename, SelectModel, Cancel and Archive are
//     honoured when claimed and refused with ErrUnsupported when not (an
//     optional interface may be absent instead).
//   - entries: a prompt turn ends with end_turn, yields an assistant.message
//     with non-empty text before Prompt returns, every entry passes
//     NewEntry.Validate, NativeIDs are unique, the prompt is not echoed as a
//     user.message (the service records it), the sink is never called
//     from two goroutines at once, and, when context.gauge is claimed, a
//     Gauge reading with Used > 0 arrives.
//   - fail-closed: a cancelled CreateSession creates nothing, a content
//     block of unknown type and a Prompt after Close are refused, History
//     of an unknown session and Attachment of an unknown ref fail.
//   - approvals: when approval.relay is claimed, a turn needing a
//     permission (Harness.Approval) asks CreateRequest.Approve with a well
//     formed request; "allow once" ends the turn with end_turn and "reject
//     once" without an error; unclaimed, the approver is never asked.
//   - resume: resuming a bogus id yields a *core.ResumeError with the
//     harness's text and no Live; resuming a session just created and
//     closed yields a Live whose NativeID is the requested one, which
//     answers a prompt.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("adaptertest.Harness.New is required")
	}
	s := &suite{h: h}
	if s.h.Timeout <= 0 {
		s.h.Timeout = 3 * time.Minute
	}
	t.Run("probe", s.testProbe)
	t.Run("host-calls", s.testHostCalls)
	t.Run("session-calls", s.testSessionCalls)
	t.Run("entries", s.testEntries)
	t.Run("fail-closed", s.testFailClosed)
	t.Run("resume", s.testResume)
	t.Run("approvals", s.testApprovals)
	t.Run("fork", s.testFork)
}

type suite struct{ h Harness }

// env is one subtest's host, context and claims.
type env struct {
	host   core.BridgeHost
	ctx    context.Context
	probe  core.Probe
	claims map[string]bool
}

func (s *suite) setup(t *testing.T) *env {
	t.Helper()
	host := s.h.New(t)
	if host == nil {
		t.Fatal("Harness.New returned nil")
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
	t.Cleanup(cancel)
	e := &env{host: host, ctx: ctx, claims: map[string]bool{}}
	e.probe = safeProbe(t, ctx, host)
	for _, c := range e.probe.Capabilities {
		if c.Available {
			e.claims[c.Name] = true
		}
	}
	return e
}

func safeProbe(t *testing.T, ctx context.Context, host core.BridgeHost) (p core.Probe) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Probe panicked: %v", r)
		}
	}()
	return host.Probe(ctx)
}

func (s *suite) request(t *testing.T) core.CreateRequest {
	req := core.CreateRequest{}
	if s.h.Cwd != nil {
		req.Cwd = s.h.Cwd(t)
	} else {
		req.Cwd = t.TempDir()
	}
	if s.h.Request != nil {
		s.h.Request(t, &req)
	}
	return req
}

func (s *suite) prompt() []core.Content {
	if len(s.h.Prompt) > 0 {
		return s.h.Prompt
	}
	return []core.Content{{Type: "text", Text: "hello"}}
}

// recorder collects what a live session sends to its sink and notices
// the sink being called from two goroutines at once.
type recorder struct {
	*Events
	inside  atomic.Int32
	overlap atomic.Bool
}

func newRecorder() *recorder { return &recorder{Events: NewEvents()} }

func (r *recorder) sink(ev core.Event) {
	if r.inside.Add(1) > 1 {
		r.overlap.Store(true)
	}
	defer r.inside.Add(-1)
	r.Sink(ev)
}

func (r *recorder) entries() []core.NewEntry { return r.Entries() }

// gauges returns the context readings seen so far.
func (r *recorder) gauges() []core.Gauge { return r.Gauges() }

// waitGauge waits until a context reading has arrived or ctx ends.
func (r *recorder) waitGauge(ctx context.Context) []core.Gauge {
	for {
		if g := r.gauges(); len(g) > 0 {
			return g
		}
		select {
		case <-r.Changed():
		case <-ctx.Done():
			return r.gauges()
		}
	}
}

// waitFor waits until ok holds for the entries seen so far or ctx ends.
func (r *recorder) waitFor(ctx context.Context, ok func([]core.NewEntry) bool) bool {
	for {
		if ok(r.entries()) {
			return true
		}
		select {
		case <-r.Changed():
		case <-ctx.Done():
			return ok(r.entries())
		}
	}
}

// start creates a session closed at the end of the test.
func (s *suite) start(t *testing.T, e *env, rec *recorder) core.Live {
	t.Helper()
	live, err := e.host.CreateSession(e.ctx, s.request(t), rec.sink)
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if live == nil {
		t.Fatal("CreateSession returned no Live and no error")
	}
	t.Cleanup(func() { closeLive(live) })
	return live
}

func closeLive(live core.Live) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = live.Close(ctx)
}

// hello runs one scripted prompt turn and returns the entries it added.
func (s *suite) hello(t *testing.T, e *env, live core.Live, rec *recorder) []core.NewEntry {
	t.Helper()
	before := len(rec.entries())
	if s.h.Script != nil {
		s.h.Script(t)
	}
	res, err := live.Prompt(e.ctx, s.prompt())
	if err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	if res.StopReason != "end_turn" {
		t.Fatalf("Prompt stop reason = %q, want end_turn", res.StopReason)
	}
	return rec.entries()[before:]
}

func unsupported(err error) bool { return errors.Is(err, core.ErrUnsupported) }

// checkRefused fails unless err wraps core.ErrUnsupported.
func checkRefused(t *testing.T, capName, call string, err error) {
	t.Helper()
	if !unsupported(err) {
		t.Errorf("%s is claimed unavailable, but %s returned %v; want an error wrapping core.ErrUnsupported", capName, call, err)
	}
}

// checkWorks fails when err is non-nil for a capability claimed available.
func checkWorks(t *testing.T, capName, call string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s is claimed available, but %s failed: %v", capName, call, err)
	}
}

// checkNotRefused fails when err wraps core.ErrUnsupported.
func checkNotRefused(t *testing.T, capName, call string, err error) {
	t.Helper()
	if unsupported(err) {
		t.Errorf("%s is claimed available, but %s refused it as unsupported: %v", capName, call, err)
	}
}

func (s *suite) testProbe(t *testing.T) {
	e := s.setup(t)
	// The run's output names the program and version it ran against.
	t.Logf("conformance: harness %s, program %s, version %s", e.probe.Harness, orNone(e.probe.Binary), orNone(e.probe.Version))
	checkProbeShape(t, e.probe)
	if e.probe.Harness != e.host.Harness() {
		t.Errorf("Probe().Harness = %q, Harness() = %q", e.probe.Harness, e.host.Harness())
	}
	if s.h.Claims != nil {
		want := map[string]bool{}
		for _, c := range s.h.Claims {
			want[c] = true
		}
		var extra, lost []string
		for c := range e.claims {
			if !want[c] {
				extra = append(extra, c)
			}
		}
		for c := range want {
			if !e.claims[c] {
				lost = append(lost, c)
			}
		}
		sort.Strings(extra)
		sort.Strings(lost)
		if len(extra)+len(lost) > 0 {
			t.Errorf("Probe disagrees with Harness.Claims: available but not claimed %v; claimed but unavailable %v", extra, lost)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	checkProbeShape(t, safeProbe(t, ctx, e.host))
}

func checkProbeShape(t *testing.T, p core.Probe) {
	t.Helper()
	known := map[string]bool{}
	for _, n := range core.Capabilities {
		known[n] = true
	}
	seen := map[string]int{}
	for _, c := range p.Capabilities {
		seen[c.Name]++
		if !known[c.Name] {
			t.Errorf("Probe lists unknown capability %q", c.Name)
			continue
		}
		if !c.Available && strings.TrimSpace(c.Detail) == "" {
			t.Errorf("capability %s is unavailable with no detail saying why", c.Name)
		}
	}
	for n := range known {
		if seen[n] != 1 {
			t.Errorf("Probe lists capability %s %d times, want once", n, seen[n])
		}
	}
}

func (s *suite) testHostCalls(t *testing.T) {
	e := s.setup(t)
	cwd := s.request(t).Cwd
	for _, c := range []struct {
		name string
		call func() error
	}{
		{core.CapSessionModels, func() error { _, err := e.host.Models(e.ctx); return err }},
		{core.CapPresetList, func() error { _, err := e.host.Presets(e.ctx); return err }},
		{core.CapWorkspaceList, func() error { _, err := e.host.Workspaces(e.ctx); return err }},
		{core.CapSessionList, func() error { _, err := e.host.ListSessions(e.ctx, cwd); return err }},
	} {
		if e.claims[c.name] {
			checkWorks(t, c.name, c.name, c.call())
		} else {
			checkRefused(t, c.name, c.name, c.call())
		}
	}
	if e.claims[core.CapPresetList] {
		presets, _ := e.host.Presets(e.ctx)
		for _, p := range presets {
			if p.Harness != "" && p.Harness != e.host.Harness() {
				t.Errorf("preset %q is for harness %q, not %q", p.Name, p.Harness, e.host.Harness())
			}
		}
	}
	bogus := bogusID()
	if !e.claims[core.CapSessionHistory] {
		_, err := e.host.History(e.ctx, bogus)
		checkRefused(t, core.CapSessionHistory, "History", err)
	}
	if !e.claims[core.CapWorkspaceArchive] {
		checkRefused(t, core.CapWorkspaceArchive, "ArchiveSession", e.host.ArchiveSession(e.ctx, bogus))
	}
	if as, ok := e.host.(core.AttachmentSource); ok && !e.claims[core.CapAttachment] {
		_, err := as.Attachment(e.ctx, bogus, "ref-1")
		checkRefused(t, core.CapAttachment, "Attachment", err)
	} else if !ok && e.claims[core.CapAttachment] {
		t.Errorf("%s is claimed available, but the host does not implement core.AttachmentSource", core.CapAttachment)
	}
	if nr, ok := e.host.(core.NativeResumer); ok && !e.claims[core.CapNativeResume] {
		live, err := nr.Resume(e.ctx, core.ResumeRequest{CreateRequest: s.request(t), NativeID: bogus}, newRecorder().sink)
		checkRefused(t, core.CapNativeResume, "Resume", err)
		if live != nil {
			closeLive(live)
			t.Errorf("Resume returned a Live although native resume is claimed unavailable")
		}
	} else if !ok && e.claims[core.CapNativeResume] {
		t.Errorf("%s is claimed available, but the host does not implement core.NativeResumer", core.CapNativeResume)
	}
	if !e.claims[core.CapSessionCreate] {
		live, err := e.host.CreateSession(e.ctx, s.request(t), newRecorder().sink)
		checkRefused(t, core.CapSessionCreate, "CreateSession", err)
		if live != nil {
			closeLive(live)
			t.Errorf("CreateSession returned a Live although session.create is claimed unavailable")
		}
	}
}

// bogusID returns a random, well-formed (UUID v4) id no harness knows.
func bogusID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// needLive reports whether the suite can drive a live session; when the
// adapter claims it cannot, host-calls has already checked the refusal.
func needLive(t *testing.T, e *env) bool {
	t.Helper()
	if e.claims[core.CapSessionCreate] && e.claims[core.CapSessionPrompt] {
		return true
	}
	t.Logf("session.create or session.prompt is claimed unavailable: nothing to drive")
	return false
}

func orNone(s string) string {
	if s == "" {
		return "(not reported)"
	}
	return s
}

// testFork: an adapter that claims session.fork has a live session that
// implements core.Forker; a fork answers a scripted prompt and closes, and
// nothing of it reaches the live session's sink. One that does not claim it
// refuses Fork with core.ErrUnsupported where its live session has one.
func (s *suite) testFork(t *testing.T) {
	e := s.setup(t)
	if !needLive(t, e) {
		return
	}
	rec := newRecorder()
	live := s.start(t, e, rec)
	fk, isForker := live.(core.Forker)
	if !e.claims[core.CapSessionFork] {
		if isForker {
			_, err := fk.Fork(e.ctx)
			checkRefused(t, core.CapSessionFork, "Fork", err)
		}
		return
	}
	if !isForker {
		t.Fatalf("%s is claimed available, but the live session does not implement core.Forker", core.CapSessionFork)
	}
	s.hello(t, e, live, rec)
	before := len(rec.entries())
	f, err := fk.Fork(e.ctx)
	if err != nil {
		t.Fatalf("%s is claimed available, but Fork failed: %v", core.CapSessionFork, err)
	}
	if s.h.Script != nil {
		s.h.Script(t)
	}
	r, err := f.Ask(e.ctx, "Reply with one short sentence.")
	checkWorks(t, core.CapSessionFork, "Fork.Ask", err)
	if err == nil && strings.TrimSpace(r.Text) == "" {
		t.Errorf("the fork answered with no text")
	}
	checkWorks(t, core.CapSessionFork, "Fork.Close", f.Close(e.ctx))
	if after := rec.entries(); len(after) != before {
		t.Errorf("the fork's turn reached the live session's sink: %d entries", len(after)-before)
	}
}

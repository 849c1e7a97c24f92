package adaptertest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
)

// liar is a fake host that lies in one way, chosen by lie.
type liar struct {
	*fake.Host
	lie string
}

func (l *liar) Probe(ctx context.Context) core.Probe {
	p := l.Host.Probe(ctx)
	switch l.lie {
	case "pause-claimed":
		for i := range p.Capabilities {
			if p.Capabilities[i].Name == core.CapGoalPause {
				p.Capabilities[i].Available, p.Capabilities[i].Detail = true, ""
			}
		}
	case "probe-duplicate":
		p.Capabilities = append(p.Capabilities, p.Capabilities[0])
	}
	return p
}

func (l *liar) CreateSession(ctx context.Context, req core.CreateRequest, sink core.EventSink) (core.Live, error) {
	if l.lie == "approval-ignored" {
		// Claims approval.relay, but decides by itself: the approver is
		// dropped and the preset's policy answers.
		req.Approve = nil
	}
	live, err := l.Host.CreateSession(ctx, req, sink)
	if err != nil {
		return nil, err
	}
	return &lyingLive{Live: live.(*fake.Live), lie: l.lie, sink: sink}, nil
}

func (l *liar) Resume(ctx context.Context, req core.ResumeRequest, sink core.EventSink) (core.Live, error) {
	if l.lie == "resume-fresh" {
		// A fresh session passed off as a resume.
		return l.Host.CreateSession(ctx, req.CreateRequest, sink)
	}
	return l.Host.Resume(ctx, req, sink)
}

type lyingLive struct {
	*fake.Live
	lie  string
	sink core.EventSink
}

func (l *lyingLive) SelectModel(ctx context.Context, model, effort string) error {
	if l.lie == "select-ignored" {
		return nil // says yes, switches nothing
	}
	return l.Live.SelectModel(ctx, model, effort)
}

func (l *lyingLive) Prompt(ctx context.Context, content []core.Content) (core.TurnResult, error) {
	switch l.lie {
	case "echo-user":
		l.sink(core.Event{Entry: &core.NewEntry{Kind: core.KindUserMessage, NativeID: "u1",
			Payload: core.Payload(map[string]string{"text": content[0].Text})}})
	case "invalid-entry":
		l.sink(core.Event{Entry: &core.NewEntry{Kind: core.KindAssistantMessage, NativeID: "bad1",
			Payload: core.Payload(map[string]string{"content": "no text member"})}})
	}
	return l.Live.Prompt(ctx, content)
}

// TestLiarHelper runs the suite against one lie when started by
// TestSuiteCatchesLies; in a normal run it does nothing.
func TestLiarHelper(t *testing.T) {
	lie := os.Getenv("ADAPTERTEST_LIE")
	if lie == "" {
		return
	}
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			return &liar{Host: fake.New(fake.Options{Missing: []string{core.CapGoalPause}}), lie: lie}
		},
		Approval: func(t *testing.T) []core.Content {
			return []core.Content{{Type: "text", Text: "ask Bash make test"}}
		},
		ReportsModel: true,
	})
}

// TestSuiteCatchesLies proves the suite fails an adapter that lies, each
// lie with the message that names it.
func TestSuiteCatchesLies(t *testing.T) {
	for lie, want := range map[string]string{
		"pause-claimed":    "goal.pause is claimed available, but PauseGoal refused it",
		"probe-duplicate":  "times, want once",
		"resume-fresh":     "want a *core.ResumeError",
		"echo-user":        "emitted the prompt back as user.message",
		"invalid-entry":    `payload is missing "text"`,
		"approval-ignored": "approval.relay is claimed available, but the turn never asked the approver",
		"select-ignored":   "returned nil, but the session never reported running",
	} {
		t.Run(lie, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLiarHelper$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "ADAPTERTEST_LIE="+lie)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed an adapter that lies (%s):\n%s", lie, out)
			}
			if !strings.Contains(string(out), want) {
				t.Fatalf("the suite failed, but without %q:\n%s", want, out)
			}
		})
	}
}

package claudecode

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core"
)

// sdkArgs is how the Agent SDK (@anthropic-ai/claude-agent-sdk) starts the
// CLI for a query with no options: no -p, no permission prompt tool.
var sdkArgs = []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}

// shapeTurn runs one ordinary turn and returns the model request it made.
func shapeTurn(t *testing.T, env *e2e, run func() error) map[string]any {
	t.Helper()
	before := len(env.fake.Requests())
	env.fake.Enqueue(fakemodel.Reply{Text: "SHAPE-REPLY"})
	if err := run(); err != nil {
		t.Fatal(err)
	}
	rs := env.fake.Requests()[before:]
	var last fakemodel.Request
	for _, r := range rs {
		if strings.Contains(r.LastUserText, "SHAPE-TURN") {
			last = r
		}
	}
	var body map[string]any
	if err := json.Unmarshal(last.Body, &body); err != nil {
		t.Fatalf("request body: %v (%d requests)", err, len(rs))
	}
	return body
}

// TestE2ERequestShape: an ordinary turn through Bridge against the same
// turn in Claude Code's own SDK mode, diffed. The only differences are the
// ones docs/checkpoints.md lists, each switched off by its preset setting:
// approvalRelay (the AskUserQuestion tool that --permission-prompt-tool
// stdio brings), planTools (the Task tools in the deferred tool list), and
// the entry point Claude Code names in its billing header (-p is sdk-cli,
// the SDK's is sdk-ts), which is not conversation.
func TestE2ERequestShape(t *testing.T) {
	t.Parallel()
	env := newE2E(t)
	h := New(env.cfg)
	off := false
	// Each of the four turns starts a Claude Code process: each has its own
	// bound, so that on a loaded machine the test is not bounded as one.
	turn := func(p core.Preset) map[string]any {
		ctx := testCtx(t)
		l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: env.cwd, Preset: p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close(ctx)
		return shapeTurn(t, env, func() error { _, err := l.Prompt(ctx, text("SHAPE-TURN hello")); return err })
	}
	full := turn(core.Preset{})
	noRelay := turn(core.Preset{ApprovalRelay: &off})
	bare := turn(core.Preset{ApprovalRelay: &off, PlanTools: &off})

	bin, _ := h.binary()
	ctx := testCtx(t)
	sdkEnv := append(append([]string{}, os.Environ()...), env.cfg.Env...)
	sdkEnv = append(sdkEnv, "CLAUDE_CONFIG_DIR="+env.cfg.ConfigDir, "CLAUDE_CODE_ENTRYPOINT=sdk-ts")
	sl, err := startLive(procutil.Spec{Path: bin, Args: append(append([]string{}, sdkArgs...), "--session-id", newUUID()), Dir: env.cwd, Env: sdkEnv},
		core.CreateRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, sl)
	if _, err := sl.initialize(ctx); err != nil {
		t.Fatal(err)
	}
	sdk := shapeTurn(t, env, func() error { _, err := sl.Prompt(ctx, text("SHAPE-TURN hello")); return err })

	check := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: differences\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// diff is adaptertest.ShapeDiff with the deferred tool list compared
	// by name: the names only one side defers, then the other differences
	// (their paths).
	diff := func(a, b map[string]any) []string {
		da, db := deferred(a), deferred(b)
		var out []string
		for _, n := range da {
			if !slices.Contains(db, n) {
				out = append(out, "bridge only: deferred "+n)
			}
		}
		for _, n := range db {
			if !slices.Contains(da, n) {
				out = append(out, "other only: deferred "+n)
			}
		}
		for _, x := range adaptertest.ShapeDiff(adaptertest.ShapeLeaves(withoutDeferred(a)), adaptertest.ShapeLeaves(withoutDeferred(b))) {
			if i := strings.Index(x, ": bridge "); i > 0 {
				x = x[:i]
			}
			out = append(out, x)
		}
		return out
	}
	check("approvalRelay", diff(full, noRelay), "bridge only: deferred EnterPlanMode", "bridge only: deferred ExitPlanMode",
		"bridge only: .tools[AskUserQuestion]")
	check("planTools", diff(noRelay, bare), "bridge only: deferred TaskCreate", "bridge only: deferred TaskGet",
		"bridge only: deferred TaskList", "bridge only: deferred TaskUpdate")
	check("bare preset against SDK mode", diff(bare, sdk), "differs: .system[0].text")
	// The system block differs by the entry point and nothing else.
	bridgeSystem := adaptertest.ShapeLeaves(bare)[".system[0].text"]
	sdkSystem := adaptertest.ShapeLeaves(sdk)[".system[0].text"]
	if !strings.Contains(bridgeSystem, "cc_entrypoint=sdk-cli") ||
		strings.Replace(bridgeSystem, "cc_entrypoint=sdk-cli", "cc_entrypoint=sdk-ts", 1) != sdkSystem {
		t.Errorf("the system block differs by more than the entry point:\nbridge %s\nsdk    %s", bridgeSystem, sdkSystem)
	}
}

// deferredHead starts the list of deferred tool names in the first user
// message.
const deferredHead = "before calling them:\n"

// deferred returns the deferred tool names a request lists.
func deferred(body map[string]any) []string {
	txt := firstUserText(body)
	i := strings.Index(txt, deferredHead)
	if i < 0 {
		return nil
	}
	rest := txt[i+len(deferredHead):]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return strings.Fields(rest)
}

// withoutDeferred is body with the deferred names cut out of the first user
// message (compared by deferred instead).
func withoutDeferred(body map[string]any) map[string]any {
	b, _ := json.Marshal(body)
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	txt := firstUserText(c)
	if i := strings.Index(txt, deferredHead); i >= 0 {
		rest := txt[i+len(deferredHead):]
		if j := strings.Index(rest, "\n\n"); j >= 0 {
			txt = txt[:i] + rest[j:]
		}
		c["messages"].([]any)[1].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] = txt
	}
	return c
}

// firstUserText is the text of the block that carries the environment (the
// second message's first block), or "".
func firstUserText(body map[string]any) string {
	ms, _ := body["messages"].([]any)
	if len(ms) < 2 {
		return ""
	}
	m, _ := ms[1].(map[string]any)
	cs, _ := m["content"].([]any)
	if len(cs) == 0 {
		return ""
	}
	c, _ := cs[0].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

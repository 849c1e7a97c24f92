package codex

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

var (
	shapeIDRE  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	shapeHexRE = regexp.MustCompile(`[0-9a-f]{32,}`)
)

// shapeLeaves lists every leaf of v by path, ids normalised; a tool (an
// object with a name) is one leaf.
func shapeLeaves(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			shapeLeaves(prefix+"."+k, y, out)
		}
	case []any:
		for i, y := range x {
			if m, ok := y.(map[string]any); ok && m["name"] != nil && m["type"] != "message" {
				b, _ := json.Marshal(m)
				out[prefix+"["+fmt.Sprint(m["name"])+"]"] = shapeHexRE.ReplaceAllString(shapeIDRE.ReplaceAllString(string(b), "<id>"), "<hex>")
				continue
			}
			shapeLeaves(fmt.Sprintf("%s[%d]", prefix, i), y, out)
		}
	default:
		s := shapeIDRE.ReplaceAllString(fmt.Sprint(x), "<id>")
		out[prefix] = shapeHexRE.ReplaceAllString(s, "<hex>")
	}
}

// TestE2ERequestShapeCodex: an ordinary turn through Bridge (app-server)
// against the same turn in Codex's own automation mode (`codex exec
// --experimental-json`, what the Codex SDK runs), diffed. The only
// differences are those docs/checkpoints.md lists: the permissions
// instructions of Bridge's asking approval policy (gone with the preset's
// approvalRelay: false), and the request's client metadata, which names the
// client and is not conversation.
func TestE2ERequestShapeCodex(t *testing.T) {
	env := newE2E(t)
	ctx := ctxT(t)
	env.model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) { return fakemodel.Reply{Text: "SHAPE-REPLY"}, true })
	h := New(env.cfg)
	turn := func(p core.Preset) map[string]any {
		l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: env.cwd, Preset: p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close(ctx)
		if _, err := l.Prompt(ctx, text("SHAPE-TURN hello")); err != nil {
			t.Fatal(err)
		}
		rs := env.model.Requests()
		var body map[string]any
		if err := json.Unmarshal(rs[len(rs)-1].Body, &body); err != nil {
			t.Fatal(err)
		}
		return body
	}
	off := false
	full := turn(core.Preset{})
	bare := turn(core.Preset{ApprovalRelay: &off})

	bin, _ := h.binary()
	cmd := exec.CommandContext(ctx, bin, "exec", "--experimental-json", "--skip-git-repo-check", "-C", env.cwd, "SHAPE-TURN hello")
	cmd.Env = h.environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("codex exec: %v\n%s", err, out)
	}
	rs := env.model.Requests()
	var sdk map[string]any
	if err := json.Unmarshal(rs[len(rs)-1].Body, &sdk); err != nil {
		t.Fatal(err)
	}
	const meta = "differs: .client_metadata.x-codex-turn-metadata"
	if got := shapeDiffCodex(full, sdk); len(got) != 2 || got[0] != meta || !strings.HasPrefix(got[1], "differs: .input[") {
		t.Errorf("Bridge's default against codex exec: %q, want the client metadata and the permissions instructions", got)
	}
	if got := shapeDiffCodex(bare, sdk); len(got) != 1 || got[0] != meta {
		t.Errorf("approvalRelay false against codex exec: %q, want only the client metadata", got)
	}
}

// shapeDiffCodex lists the paths where a and b differ.
func shapeDiffCodex(a, b map[string]any) []string {
	fa, fb := map[string]string{}, map[string]string{}
	shapeLeaves("", a, fa)
	shapeLeaves("", b, fb)
	var out []string
	for k, v := range fa {
		if w, ok := fb[k]; !ok {
			out = append(out, "bridge only: "+k)
		} else if v != w {
			out = append(out, "differs: "+k)
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			out = append(out, "sdk only: "+k)
		}
	}
	sort.Strings(out)
	return out
}

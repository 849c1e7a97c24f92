package acp_test

import (
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/acp"
	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// realConformanceAgents are the real agents the conformance suite runs on,
// each with exactly the capabilities its probe must confirm.
var realConformanceAgents = []struct {
	agent  realACPAgent
	claims []string
}{
	// claude-code-acp lists a compact command but reports no compaction
	// over ACP, and sends no usage_update: neither is claimed.
	{realACPAgents[0], []string{core.CapSessionList, core.CapSessionCreate, core.CapSessionHistory,
		core.CapSessionModels, core.CapSessionSelect, core.CapSessionPrompt, core.CapSessionCancel,
		core.CapPresetList, core.CapNativeResume, core.CapApprovalRelay}},
}

// TestRealAgentsConformance runs the shared conformance suite on each real
// ACP agent pinned in package.json, against the fake model server.
func TestRealAgentsConformance(t *testing.T) {
	for _, rc := range realConformanceAgents {
		a := rc.agent
		bin := adaptertest.FindBinary(t, a.bin)
		ver := npmVersion(t, a.pkg)
		t.Run(a.bin+"@"+ver, func(t *testing.T) {
			t.Logf("target: %s %s (%s)", a.pkg, ver, bin)
			adaptertest.Run(t, adaptertest.Harness{
				New: func(t *testing.T) core.BridgeHost {
					fake, err := fakemodel.Start()
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = fake.Close() })
					fake.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
						if r.IsSummaryRequest() {
							return fakemodel.Reply{Text: "summary of the conversation"}, true
						}
						return fakemodel.Reply{Text: "hello from the fake model"}, true
					})
					home := t.TempDir()
					env := append([]string{"HOME=" + home}, a.env(t, fake, home)...)
					h := acp.New(acp.Config{Name: "acp", Command: bin, Env: env})
					warm(t, h)
					return h
				},
				Claims:  rc.claims,
				Timeout: 2 * time.Minute,
			})
		})
	}
}

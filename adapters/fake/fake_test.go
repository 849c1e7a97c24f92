package fake_test

import (
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
)

// allCaps returns every capability name except those in without.
func allCaps(without ...string) []string {
	skip := map[string]bool{}
	for _, w := range without {
		skip[w] = true
	}
	var out []string
	for _, c := range core.Capabilities {
		if !skip[c] {
			out = append(out, c)
		}
	}
	return out
}

func TestConformanceAllCapabilities(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			return fake.New(fake.Options{StateDir: t.TempDir(), CompactFocus: true, Gauge: true, Window: 1000})
		},
		Claims:       allCaps(),
		Approval:     askBash,
		ReportsModel: true,
	})
}

// askBash is a turn whose tool needs a permission.
func askBash(t *testing.T) []core.Content {
	return []core.Content{{Type: "text", Text: "ask Bash make test"}}
}

func TestConformanceMissingGoalPause(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			return fake.New(fake.Options{Missing: []string{core.CapGoalPause}, CompactFocus: true, Gauge: true})
		},
		Claims:   allCaps(core.CapGoalPause),
		Approval: askBash,
	})
}

func TestConformanceNoNativeResume(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			return fake.New(fake.Options{Missing: []string{core.CapNativeResume}})
		},
		// Without CompactFocus and Gauge the focus and the gauge are off too.
		Claims:   allCaps(core.CapNativeResume, core.CapCompactionFocus, core.CapContextGauge),
		Approval: askBash,
		Prompt:   []core.Content{{Type: "text", Text: "say hello there\ntool Read a.go"}},
		Expect: func(t *testing.T, entries []core.NewEntry) {
			kinds := []core.Kind{}
			for _, e := range entries {
				kinds = append(kinds, e.Kind)
			}
			want := []core.Kind{core.KindAssistantMessage, core.KindToolStarted, core.KindToolCompleted}
			if len(kinds) != len(want) {
				t.Fatalf("kinds = %v, want %v", kinds, want)
			}
			for i := range want {
				if kinds[i] != want[i] {
					t.Fatalf("kinds = %v, want %v", kinds, want)
				}
			}
		},
	})
}

// Every capability switched off: the suite's refusal branches all run.
func TestConformanceNothingAvailable(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			return fake.New(fake.Options{Missing: allCaps()})
		},
		Claims: []string{},
	})
}

// Only prompting works: every session-level refusal is exercised on a live
// session.
func TestConformanceOnlyPrompting(t *testing.T) {
	only := []string{core.CapSessionCreate, core.CapSessionPrompt}
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t *testing.T) core.BridgeHost {
			return fake.New(fake.Options{Missing: allCaps(only...), CompactFocus: true, Gauge: true})
		},
		Claims: only,
	})
}

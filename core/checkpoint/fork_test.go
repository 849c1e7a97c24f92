package checkpoint

import (
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

func forkEntry(id string, k core.Kind, payload map[string]any) core.Entry {
	return core.Entry{ID: id, Kind: k, Payload: core.Payload(payload)}
}

// TestProjectForkWithoutCheckpoint: with no checkpoint, the fork starts from
// the whole conversation up to the fork point, without bookkeeping and
// without a tool call whose result came after the fork point.
func TestProjectForkWithoutCheckpoint(t *testing.T) {
	path := []core.Entry{
		forkEntry("e1", core.KindUserMessage, map[string]any{"text": "first question"}),
		forkEntry("e2", core.KindToolStarted, map[string]any{"toolId": "t1", "name": "Bash"}),
		forkEntry("e3", core.KindToolCompleted, map[string]any{"toolId": "t1", "output": "ok"}),
		forkEntry("e4", core.KindContextUsage, map[string]any{"used": 10}),
		forkEntry("e5", core.KindAssistantMessage, map[string]any{"text": "first answer"}),
		forkEntry("e6", core.KindToolStarted, map[string]any{"toolId": "t2", "name": "Read"}),
	}
	p := ProjectFork(path, ProjectOptions{Model: "m1"})
	var ids []string
	for _, e := range p.Retained {
		ids = append(ids, e.ID)
	}
	if got := strings.Join(ids, ","); got != "e1,e2,e3,e5" {
		t.Fatalf("retained %s, want e1,e2,e3,e5", got)
	}
	text := RenderFork(ForkSource{SessionID: "s_1", EntryID: "e6", Harness: "claude-code", Title: "t"}, p)
	for _, want := range []string{"first question", "first answer", "[Bash call t1]", "claude-code", "s_1", "e6", "model: m1"} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered fork lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "t2") {
		t.Errorf("an unfinished tool call is in the fork:\n%s", text)
	}
}

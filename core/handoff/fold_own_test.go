package handoff

import (
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// TestFoldLeavesOutBridgesOwnExchanges (issue 16, defect b): Bridge's own
// checkpoint request, the model's JSON reply (first attempt and repair) and
// the injected "restored session" text with its answer are not
// conversation: they neither reach the summary worker nor use the fold's
// message cap or character budget.
func TestFoldLeavesOutBridgesOwnExchanges(t *testing.T) {
	b := []core.Entry{
		entry(core.KindUserMessage, map[string]any{"text": "REAL-U1 move the server to port 55837"}),
		entry(core.KindAssistantMessage, map[string]any{"text": "REAL-A1 done, listen.go changed"}),
		entry(core.KindCompactionRequest, map[string]any{"reason": "phase_boundary", "attempt": 0}),
		entry(core.KindUserMessage, map[string]any{"text": "Bridge checkpoint request (reason: phase_boundary). Reply with one JSON object"}),
		entry(core.KindAssistantMessage, map[string]any{"text": "sorry, no JSON"}),
		entry(core.KindCompactionRequest, map[string]any{"reason": "phase_boundary", "attempt": 1}),
		entry(core.KindUserMessage, map[string]any{"text": "Your reply could not be used as a checkpoint"}),
		entry(core.KindAssistantMessage, map[string]any{"text": `{"summary": "CKPT-JSON-REPLY"}`}),
		entry(core.KindCheckpoint, map[string]any{"summary": "the checkpoint summary"}),
		entry(core.KindCompaction, map[string]any{"checkpointEntryId": "x"}),
		entry(core.KindBranchSummary, map[string]any{"summary": "Compaction boundary; subsequent entries are retained"}),
		// A later process restored the session from the checkpoint.
		entry(core.KindUserMessage, map[string]any{"text": "# Restored session\n\nThis session continues earlier work from another process."}),
		entry(core.KindAssistantMessage, map[string]any{"text": "RESTORE-ACK understood"}),
		entry(core.KindSessionRestored, map[string]any{"mode": "checkpoint_restored"}),
		// A request whose process died: closed by the restoration.
		entry(core.KindCompactionRequest, map[string]any{"reason": "before_shutdown", "attempt": 0}),
		entry(core.KindUserMessage, map[string]any{"text": "Bridge checkpoint request (reason: before_shutdown)"}),
		entry(core.KindSessionRestored, map[string]any{"mode": "native"}),
		entry(core.KindUserMessage, map[string]any{"text": "REAL-U2 now add a test"}),
		entry(core.KindAssistantMessage, map[string]any{"text": "REAL-A2 test added"}),
		// A failed request is closed by compaction.failed.
		entry(core.KindCompactionRequest, map[string]any{"reason": "manual", "attempt": 0}),
		entry(core.KindUserMessage, map[string]any{"text": "Bridge checkpoint request (reason: manual)"}),
		entry(core.KindCompactionFailed, map[string]any{"reason": "manual"}),
	}
	s := Fold(b, FoldOptions{MaxMessages: 4})
	for _, own := range []string{"Bridge checkpoint request", "could not be used", "sorry, no JSON", "CKPT-JSON-REPLY", "Restored session", "RESTORE-ACK"} {
		if strings.Contains(s.Text, own) {
			t.Errorf("the fold carries Bridge's own %q:\n%s", own, s.Text)
		}
	}
	for _, real := range []string{"REAL-U1", "REAL-A1", "REAL-U2", "REAL-A2"} {
		if !strings.Contains(s.Text, real) {
			t.Errorf("the fold lost %q (Bridge's own messages used its cap):\n%s", real, s.Text)
		}
	}
	if s.Stats.MessagesTotal != 4 || s.Stats.MessagesRead != 4 || s.Stats.UsersTotal != 2 {
		t.Errorf("stats %+v: want 4 messages, 2 from the user", s.Stats)
	}
}

package codex

import (
	"bufio"
	"fmt"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
)

// TestImportStreams: a rollout of 5,000 user and agent messages reaches the
// sink in batches while the file is still being read.
func TestImportStreams(t *testing.T) {
	path := adaptertest.WriteTranscript(t, "rollout.jsonl", func(w *bufio.Writer) {
		fmt.Fprintln(w, `{"timestamp":"2026-11-30T04:17:28.421Z","ordinal":0,"type":"session_meta","payload":{"id":"thread-1","cwd":"/p"}}`)
		for i := 1; i <= 5000; i++ {
			typ := "UserMessage"
			if i%2 == 0 {
				typ = "AgentMessage"
			}
			fmt.Fprintf(w, `{"timestamp":"2026-11-30T04:17:28.524Z","ordinal":%d,"type":"event_msg","payload":{"type":"item_completed","thread_id":"thread-1","turn_id":"turn-%d","item":{"type":"%s","id":"item-%d","content":[{"type":"text","text":"message %d"}]}}}`+"\n",
				i, i/2, typ, i, i)
		}
	})
	if n := adaptertest.CheckImportStreams(t, New(Config{}), path); n != 5000 {
		t.Errorf("streamed %d entries, want 5000", n)
	}
}

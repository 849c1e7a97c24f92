package claudecode

import (
	"bufio"
	"fmt"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
)

// TestImportStreams: a transcript of 10,000 messages reaches the sink in
// batches while it is still being read (the whole transcript is never held),
// and a compaction summary that comes a few lines after its boundary still
// folds into the context.compacted entry even when a batch ends between
// them.
func TestImportStreams(t *testing.T) {
	path := adaptertest.WriteTranscript(t, "s.jsonl", func(w *bufio.Writer) {
		for i := 0; i < 10000; i++ {
			if i == 999 {
				fmt.Fprintf(w, `{"type":"system","subtype":"compact_boundary","uuid":"b-1","sessionId":"s1","compactMetadata":{"trigger":"auto","preTokens":1000}}`+"\n")
				fmt.Fprintf(w, `{"type":"user","uuid":"sum-1","sessionId":"s1","isCompactSummary":true,"message":{"role":"user","content":"the summary"}}`+"\n")
				continue
			}
			fmt.Fprintf(w, `{"type":"user","uuid":"u-%d","sessionId":"s1","cwd":"/p","message":{"role":"user","content":"message %d"}}`+"\n", i, i)
		}
	})
	h := New(Config{ConfigDir: t.TempDir()})
	if n := adaptertest.CheckImportStreams(t, h, path); n != 10000 {
		t.Errorf("streamed %d entries, want 10000 (9,999 messages and one compaction; the summary folds into it)", n)
	}
	is, err := h.Import(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var folded bool
	for _, e := range is.Entries {
		if e.NativeID == "b-1" {
			folded = strings.Contains(string(e.Payload), `"summary":"the summary"`)
		}
		if e.NativeID == "sum-1" {
			t.Errorf("the compaction summary was recorded as a message of its own")
		}
	}
	if !folded {
		t.Errorf("the compaction summary was not folded into the context.compacted entry")
	}
	if is.NativeID != "s1" || is.Cwd != "/p" {
		t.Errorf("session %q cwd %q", is.NativeID, is.Cwd)
	}
}

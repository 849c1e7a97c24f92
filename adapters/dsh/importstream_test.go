package dsh_test

import (
	"bufio"
	"fmt"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/dsh"
)

// TestImportStreams: a plain-JSONL session log of 3,000 turns (about 2 MB)
// reaches the sink in batches while it is still being read.
func TestImportStreams(t *testing.T) {
	path := adaptertest.WriteTranscript(t, "session.jsonl", func(w *bufio.Writer) {
		fmt.Fprintln(w, `{"type":"session","version":0,"id":"session-1","createdAt":1796010489170,"cwd":"/p","delegationDepth":0}`)
		seq := 0
		for i := 0; i < 3000; i++ {
			fmt.Fprintf(w, `{"type":"user/message","seq":%d,"time":1796010489406,"data":{"content":[{"type":"text","text":"question %d, padded so that the log is a few megabytes long: lorem ipsum dolor sit amet consectetur"}],"source":{"kind":"user"},"role":"user","id":"u-%d"},"surfaceOp":"append"}`+"\n", seq, i, i)
			seq++
		}
	})
	n := adaptertest.CheckImportStreams(t, dsh.New(dsh.Config{}), path)
	if n < 3000 {
		t.Errorf("streamed %d entries, want at least 3000", n)
	}
}

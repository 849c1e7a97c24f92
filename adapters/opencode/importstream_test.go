package opencode

import (
	"bufio"
	"fmt"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
)

// TestImportStreams: an `opencode export` document of 4,000 messages
// (about 3 MB) is read one message at a time: its entries reach the sink in
// batches while the document is still being read.
func TestImportStreams(t *testing.T) {
	path := adaptertest.WriteTranscript(t, "export.json", func(w *bufio.Writer) {
		fmt.Fprint(w, "Exporting session: ses_1\n")
		fmt.Fprint(w, `{"info":{"id":"ses_1","directory":"/p","title":"t","model":{"id":"m","providerID":"p"}},"messages":[`)
		pad := make([]byte, 600)
		for i := range pad {
			pad[i] = 'x'
		}
		for i := 0; i < 4000; i++ {
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, `{"info":{"role":"user","id":"msg_%d","sessionID":"ses_1","time":{"created":%d}},"parts":[{"type":"text","text":"hello %d %s","id":"prt_%d","sessionID":"ses_1","messageID":"msg_%d"}]}`,
				i, i, i, pad, i, i)
		}
		fmt.Fprint(w, "]}\n")
	})
	if n := adaptertest.CheckImportStreams(t, New(Config{}), path); n != 4000 {
		t.Errorf("streamed %d entries, want 4000", n)
	}
}

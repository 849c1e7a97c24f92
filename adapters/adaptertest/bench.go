package adaptertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// BenchCheckpointPrompt stands for Bridge's checkpoint request (about the
// length of the real one with a short evidence list). A fake model should
// answer it with a reply holding "55837".
var BenchCheckpointPrompt = "Bridge checkpoint request (manual). " + strings.Repeat("Write a checkpoint of this session as one JSON object. ", 12)

// BenchCheckpointReply is the checkpoint reply a fake model should give to
// BenchCheckpointPrompt; benchReplyText is what of it a request quoting it
// holds verbatim (JSON escapes the rest).
const (
	BenchCheckpointReply = `{"summary":"the parser is written; port 55837"}`
	benchReplyText       = "the parser is written; port 55837"
)

// checkpointBytes is how many bytes of body are checkpoint text: each
// copy of the request counted at its length, each copy of the reply at
// the reply's.
func checkpointBytes(body string) int {
	return strings.Count(body, BenchCheckpointPrompt)*len(BenchCheckpointPrompt) +
		strings.Count(body, benchReplyText)*len(BenchCheckpointReply)
}

// BenchOrdinaryTurn is the prefix of every ordinary live turn
// BenchCheckpointMethods sends.
const BenchOrdinaryTurn = "Ordinary turn number "

// BenchCheckpointMethods measures, on one live session l whose harness can
// fork (core.Forker), what each way of asking a checkpoint costs the live
// conversation: per iteration a fork checkpoint (Fork, Ask, Close: what the
// service does) and an in-thread one (a turn of the live session), each
// followed by an ordinary live turn; and one live turn while a fork
// checkpoint runs beside it against one without. newest is the body of
// the live thread's newest model request. Metrics: fork-ms, inthread-ms
// and their ratio; the checkpoint text (request and reply) each adds to
// the live thread's next request; live-ms, live-during-fork-ms and their
// ratio.
func BenchCheckpointMethods(b *testing.B, ctx context.Context, l core.Live, newest func() string) {
	liveBytes := func() int { return checkpointBytes(newest()) }
	b.Helper()
	turnN := 0
	turn := func() time.Duration {
		turnN++
		start := time.Now()
		if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: fmt.Sprintf("%s%04d: carry on with the parser.", BenchOrdinaryTurn, turnN)}}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	forkCheckpoint := func() time.Duration {
		start := time.Now()
		fk, err := l.(core.Forker).Fork(ctx)
		if err != nil {
			b.Fatal(err)
		}
		r, err := fk.Ask(ctx, BenchCheckpointPrompt)
		if err != nil || !strings.Contains(r.Text, "55837") {
			b.Fatalf("fork ask: %q %v", r.Text, err)
		}
		d := time.Since(start)
		if err := fk.Close(ctx); err != nil {
			b.Fatal(err)
		}
		return d
	}
	inThread := func() time.Duration {
		start := time.Now()
		if _, err := l.Prompt(ctx, []core.Content{{Type: "text", Text: BenchCheckpointPrompt}}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	turn()
	var forkD, inD, alone, during time.Duration
	var forkBytes, inBytes int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		alone += turn()
		s1 := liveBytes()
		forkD += forkCheckpoint()
		turn()
		s2 := liveBytes()
		forkBytes += s2 - s1
		inD += inThread()
		turn()
		inBytes += liveBytes() - s2
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); forkCheckpoint() }()
		during += turn()
		wg.Wait()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(forkD.Milliseconds())/n, "fork-ms")
	b.ReportMetric(float64(inD.Milliseconds())/n, "inthread-ms")
	b.ReportMetric(float64(forkD)/float64(inD), "fork/inthread")
	b.ReportMetric(float64(forkBytes)/n, "fork-live-bytes")
	b.ReportMetric(float64(inBytes)/n, "inthread-live-bytes")
	b.ReportMetric(float64(alone.Milliseconds())/n, "live-ms")
	b.ReportMetric(float64(during.Milliseconds())/n, "live-during-fork-ms")
	b.ReportMetric(float64(during)/float64(alone), "during/alone")
}

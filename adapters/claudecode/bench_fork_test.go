package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// benchCheckpointPrompt stands for Bridge's checkpoint request (its length
// is about that of the real one with a short evidence list).
var benchCheckpointPrompt = "Bridge checkpoint request (manual). " + strings.Repeat("Write a checkpoint of this session as one JSON object. ", 12)

// benchReply is the checkpoint reply the fake model gives.
const benchReply = `{"summary":"the parser is written; port 55837","decisions":["port 55837"],"filesTouched":["internal/server/listen.go"],"openWork":["tests"]}`

// liveMessagesBytes is the size of the messages of the newest request of
// Claude Code session native.
func liveMessagesBytes(srv *fakemodel.Server, native string) int {
	rs := srv.Requests()
	for i := len(rs) - 1; i >= 0; i-- {
		var b struct {
			Messages json.RawMessage `json:"messages"`
			Metadata struct {
				UserID string `json:"user_id"`
			} `json:"metadata"`
		}
		if json.Unmarshal(rs[i].Body, &b) == nil && strings.Contains(b.Metadata.UserID, native) {
			return len(b.Messages)
		}
	}
	return 0
}

// BenchmarkCheckpointMethods measures, on one real Claude Code session
// against the fake model, what each way of asking a checkpoint costs the
// live conversation: per iteration a fork checkpoint (Fork, Ask, Close: what
// the service does) and an in-thread one (a turn of the live session), each
// followed by an ordinary live turn; and one live turn while a fork
// checkpoint runs beside it against one without. Metrics: fork-ms and
// inthread-ms and their ratio; the bytes each adds to the live thread's
// next request beyond an ordinary turn's own growth; live-ms alone and
// live-during-fork-ms and their ratio.
func BenchmarkCheckpointMethods(b *testing.B) {
	env := newE2E(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	env.fake.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		if strings.Contains(r.LastUserText, "Bridge checkpoint request") {
			return fakemodel.Reply{Text: benchReply}, true
		}
		return fakemodel.Reply{Text: "Noted: turn answered."}, true
	})
	h := New(env.cfg)
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: env.cwd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	native := l.NativeID()
	turnN := 0
	turn := func() time.Duration {
		turnN++
		start := time.Now()
		if _, err := l.Prompt(ctx, text("Ordinary turn number "+pad(turnN)+": carry on with the parser.")); err != nil {
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
		r, err := fk.Ask(ctx, benchCheckpointPrompt)
		if err != nil || !strings.Contains(r.Text, "55837") {
			b.Fatalf("fork ask: %q %v", r.Text, err)
		}
		d := time.Since(start)
		fk.Close(ctx)
		return d
	}
	inThread := func() time.Duration {
		start := time.Now()
		if _, err := l.Prompt(ctx, text(benchCheckpointPrompt)); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	turn()
	var forkD, inD, alone, during time.Duration
	var forkBytes, inBytes int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// An ordinary turn's own growth.
		s0 := liveMessagesBytes(env.fake, native)
		alone += turn()
		s1 := liveMessagesBytes(env.fake, native)
		plain := s1 - s0
		forkD += forkCheckpoint()
		turn()
		s2 := liveMessagesBytes(env.fake, native)
		forkBytes += (s2 - s1) - plain
		inD += inThread()
		turn()
		s3 := liveMessagesBytes(env.fake, native)
		inBytes += (s3 - s2) - plain
		// A live turn while a fork checkpoint runs beside it.
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

// pad is n in four digits, so that every ordinary turn has the same length.
func pad(n int) string { return fmt.Sprintf("%04d", n) }

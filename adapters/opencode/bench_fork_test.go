package opencode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/fakemodel"
	"github.com/bridge-dev/bridge/core"
)

// BenchmarkCheckpointMethods: adaptertest.BenchCheckpointMethods on one
// real OpenCode session against the fake model. Its forks are copies on
// the fork server (a second opencode serve at nice 10 with its own
// database in memory, made from a replica of the live session); the
// benchmark first starts that server, waits until it answers and reports
// how long that took (fork-server-wait-ms), so that every fork measured
// runs there.
func BenchmarkCheckpointMethods(b *testing.B) {
	bin := adaptertest.FindBinary(b, "opencode")
	model, err := fakemodel.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer model.Close()
	model.Responder(func(r fakemodel.Request) (fakemodel.Reply, bool) {
		switch {
		case strings.Contains(strings.ToLower(string(r.Body)), "title generator"):
			return fakemodel.Reply{Text: "A title"}, true
		case strings.Contains(r.LastUserText, "Bridge checkpoint request"):
			return fakemodel.Reply{Text: adaptertest.BenchCheckpointReply}, true
		}
		return fakemodel.Reply{Text: "Noted: turn answered."}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	h := New(Config{Command: bin, Home: b.TempDir(), ConfigJSON: fakeProviderConfig(model.URL), Env: offlineEnv,
		StartTimeout: 5 * time.Minute})
	defer h.Close(context.Background())
	l, err := h.CreateSession(ctx, core.CreateRequest{Cwd: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	start := time.Now()
	if _, err := h.awaitForkServer(ctx); err != nil {
		b.Fatal(err)
	}
	wait := time.Since(start)
	// After the run: its ResetTimer deletes the metrics reported before.
	defer b.ReportMetric(float64(wait.Milliseconds()), "fork-server-wait-ms")
	adaptertest.BenchCheckpointMethods(b, ctx, l, func() string {
		rs := model.Requests()
		for i := len(rs) - 1; i >= 0; i-- {
			if strings.Contains(rs[i].LastUserText, adaptertest.BenchOrdinaryTurn) && !strings.Contains(strings.ToLower(string(rs[i].Body)), "title generator") {
				return string(rs[i].Body)
			}
		}
		return ""
	})
}

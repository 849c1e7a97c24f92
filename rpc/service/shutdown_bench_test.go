package service_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// BenchmarkShutdownCheckpoints measures Close (the shutdown path) with N
// live fake sessions that each need a before_shutdown checkpoint, against
// one session in the same run: the checkpoints run in parallel, so 8 should
// cost little more than 1. latency is the fake model's time to answer a
// checkpoint request (0: Bridge's own cost only).
func BenchmarkShutdownCheckpoints(b *testing.B) {
	for _, latency := range []time.Duration{0, 200 * time.Millisecond} {
		for _, n := range []int{1, 8} {
			b.Run(fmt.Sprintf("latency=%s/sessions=%d", latency, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					svc := shutdownRig(b, n, latency)
					b.StartTimer()
					if err := svc.Close(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// shutdownRig is a service with n live fake sessions, each with new work
// since its last boundary.
func shutdownRig(b *testing.B, n int, latency time.Duration) *service.Service {
	b.Helper()
	ctx := context.Background()
	answer := []fake.Step{{Op: fake.OpJSON, Text: `{"summary": "shutdown benchmark", "decisions": ["keep it"]}`}}
	if latency > 0 {
		answer = append([]fake.Step{{Op: fake.OpSleep, Wait: latency}}, answer...)
	}
	rec := servicetest.NewRecorder()
	svc, err := service.New(service.Options{Store: storagetest.Open(b), Notifier: rec, DataDir: b.TempDir(),
		Hosts:              []core.BridgeHost{fake.New(fake.Options{Script: scriptFor(map[string][]fake.Step{"Bridge checkpoint request": answer})})},
		ShutdownCheckpoint: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		s, err := svc.SessionCreate(ctx, schema.SessionCreateParams{Harness: "fake", Cwd: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.SessionID,
			Content: []schema.Content{{Type: "text", Text: "say working\nfile src/a.go"}}}); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		if len(rec.Saved) != n {
			b.Errorf("%d checkpoints saved at shutdown, want %d", len(rec.Saved), n)
		}
	})
	return svc
}

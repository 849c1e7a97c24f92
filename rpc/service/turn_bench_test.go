package service_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// BenchmarkTurnBySessionLength: Bridge's own cost of one turn (a prompt to
// the in-process fake harness, its entries recorded, the window summary
// kept, the notifications made) on a session that already holds 100, 1,000
// or 5,000 entries. A per-turn cost that grows with the session's length
// would show as a higher ns/op (and cpu-ns/op, the process's CPU time per
// turn) for the longer sessions. The fake harness's own transcript grows
// with the turns it runs (it rereads and rewrites it on every update): the
// entries=N sessions are grown by appending to the record (the harness's
// transcript stays short, and the same b.N for every length keeps its cost
// equal: run with a fixed -benchtime Nx), the harness-grown ones by turns,
// as a client's session grows, which includes the harness's growing cost.
//
//	go test -run '^$' -bench TurnBySessionLength -benchtime 100x -count 6 ./rpc/service
func BenchmarkTurnBySessionLength(b *testing.B) {
	type size struct {
		n       int
		harness bool // grown by turns through the harness, not appended
	}
	for _, sz := range []size{{100, false}, {1000, false}, {5000, false}, {100, true}, {1000, true}} {
		n := sz.n
		name := fmt.Sprintf("entries=%d", n)
		if sz.harness {
			name = fmt.Sprintf("harness-grown/entries=%d", n)
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			db := storagetest.Open(b)
			svc, err := service.New(service.Options{Store: db, Hosts: []core.BridgeHost{fake.New(fake.Options{})},
				Notifier: servicetest.NewRecorder(), DataDir: b.TempDir(), NoShutdownCheckpoint: true})
			if err != nil {
				b.Fatal(err)
			}
			defer svc.Close(ctx)
			s, err := svc.SessionCreate(ctx, schema.SessionCreateParams{Harness: "fake", Cwd: b.TempDir(), Title: "t"})
			if err != nil {
				b.Fatal(err)
			}
			turn := func() {
				if _, err := svc.SessionPrompt(ctx, schema.SessionPromptParams{SessionID: s.SessionID,
					Content: []schema.Content{{Type: "text", Text: "say it prints a greeting"}}}); err != nil {
					b.Fatal(err)
				}
			}
			turn()
			for have := 0; have < n && !sz.harness; have += 500 {
				if _, err := db.Append(ctx, s.SessionID, turnShaped(min(500, n-have))...); err != nil {
					b.Fatal(err)
				}
			}
			for sz.harness {
				br, err := db.ActiveBranch(ctx, s.SessionID)
				if err != nil {
					b.Fatal(err)
				}
				if len(br) >= n {
					break
				}
				for range 10 {
					turn()
				}
			}
			turn()
			cpu0 := processCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				turn()
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time the process has used (user and system), in
// nanoseconds: on a loaded machine a turn's wall time is mostly waiting for
// a core, its CPU time is what it costs.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// turnShaped returns n entries like a turn's: a question, a tool call and
// its result, a context reading, an answer.
func turnShaped(n int) []core.NewEntry {
	out := make([]core.NewEntry, 0, n)
	for i := 0; len(out) < n; i++ {
		tid := fmt.Sprintf("t%d", i)
		out = append(out,
			core.NewEntry{Kind: core.KindUserMessage, Payload: core.Payload(map[string]string{"text": "what does the code do"})},
			core.NewEntry{Kind: core.KindToolStarted, Payload: core.Payload(map[string]string{"toolId": tid, "name": "Read"})},
			core.NewEntry{Kind: core.KindToolCompleted, Payload: core.Payload(map[string]string{"toolId": tid, "output": "package main"})},
			core.NewEntry{Kind: core.KindContextUsage, Payload: core.Payload(map[string]int{"used": 1000 + i})},
			core.NewEntry{Kind: core.KindAssistantMessage, Payload: core.Payload(map[string]string{"text": "it prints a greeting"})})
	}
	return out[:n]
}

package service_test

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// BenchmarkMigrationPreviewRepair: migration/preview of a 40-message
// source whose summary worker writes within budget at once ("direct")
// against one whose first handoff is over budget and gets the repair
// request ("repair"). Besides wall time (noisy on a loaded machine) it
// reports the process's CPU time (user and system) per preview, and the worker's tokens, counted
// as a model is charged for them (characters/4): each request's input is the
// whole conversation so far, the repair's included, plus its output.
//
//	go test -run '^$' -bench MigrationPreviewRepair -count 10 ./rpc/service
func BenchmarkMigrationPreviewRepair(b *testing.B) {
	short := strings.Replace(handoffText, "The parser works;", "The parser works; "+strings.Repeat("it is fast. ", 100), 1)
	long := strings.Replace(handoffText, "The parser works;", "The parser works; "+strings.Repeat("it is fast. ", 300), 1)
	for _, c := range []struct {
		name  string
		first string
	}{{"direct", short}, {"repair", long}} {
		b.Run(c.name, func(b *testing.B) {
			var convo, tokens int // the worker's conversation so far, its tokens charged
			charge := func(in, out string) {
				convo += len(in)
				tokens += convo/4 + len(out)/4
				convo += len(out)
			}
			o := fake.Options{Script: func(p string) []fake.Step {
				switch {
				case strings.Contains(p, "You write handoffs"):
					convo = 0
					charge(p, c.first)
					return []fake.Step{{Op: fake.OpJSON, Text: c.first}}
				case strings.Contains(p, "Your handoff is"):
					charge(p, short)
					return []fake.Step{{Op: fake.OpJSON, Text: short}}
				}
				return nil
			}}
			r := newRig(b, rigOptions{fake: o, presets: []core.Preset{{Name: "reviewer", Harness: "fake"}}})
			src := r.create()
			for i := 0; i < 20; i++ {
				r.prompt(src.ID, "say step "+strings.Repeat("of the parser work ", 15))
			}
			ctx := context.Background()
			tokens = 0
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, err := r.svc.MigrationPreview(ctx, schema.MigrationPreviewParams{SessionID: src.ID, Target: schema.MigrationTarget{Preset: "reviewer"}})
				if err != nil || p.OverBudget {
					b.Fatalf("preview: %v (overBudget %v)", err, p.OverBudget)
				}
			}
			b.ReportMetric(float64(tokens)/float64(b.N), "worker-tokens/op")
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user plus system CPU time so far, in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package checkpoint

import (
	"fmt"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

// benchBranch is a branch with one boundary and n entries after it: user
// and assistant messages, tool pairs, worker results (with decisions and
// files, some repeating) and artifacts.
func benchBranch(n int) []core.Entry {
	b := newBranch()
	b.user("start")
	b.commit(validCP("earlier", "d0"), "")
	for i := 0; len(b.entries) < n+4; i++ {
		switch i % 8 {
		case 0:
			b.user(fmt.Sprintf("please do step %d of the migration and report back", i))
		case 1:
			b.toolStart(fmt.Sprintf("t%d", i))
		case 2:
			b.toolDone(fmt.Sprintf("t%d", i-1))
		case 3:
			b.worker([]string{fmt.Sprintf("decision %d", i%500), "keep ids as strings"},
				[]string{fmt.Sprintf("pkg%d/file%d.go", i%50, i%700), "go.mod"})
		case 4:
			b.artifact(fmt.Sprintf("docs/report-%d.md", i%300))
		default:
			b.assistant(fmt.Sprintf("step %d finished; the numbers are 12, 345 and 6789 as before", i))
		}
	}
	return b.entries
}

const benchEntries = 50_000

func BenchmarkScanEvidence50k(b *testing.B) {
	branch := benchBranch(benchEntries)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ev := ScanEvidence(branch)
		if ev.Scanned < benchEntries {
			b.Fatalf("scanned %d", ev.Scanned)
		}
	}
}

func BenchmarkProject50k(b *testing.B) {
	branch := benchBranch(benchEntries)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := Project(branch, ProjectOptions{})
		if err != nil || len(p.Retained) < benchEntries-10 {
			b.Fatalf("%d retained, %v", len(p.Retained), err)
		}
	}
}

func BenchmarkProject50kBudget(b *testing.B) {
	branch := benchBranch(benchEntries)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := Project(branch, ProjectOptions{Budget: RetainPolicy{KeepMessages: 200, TokenBudget: 40_000}})
		if err != nil || p.Omitted == 0 {
			b.Fatalf("omitted %d, %v", p.Omitted, err)
		}
	}
}

func BenchmarkBranchActivity50k(b *testing.B) {
	branch := benchBranch(benchEntries)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		BranchActivity(branch)
	}
}

func BenchmarkPlanRetention50k(b *testing.B) {
	branch := benchBranch(benchEntries)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		PlanRetention(branch, RetainPolicy{KeepMessages: 40})
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// repoOfFiles makes a repository of n committed files (100 per folder).
func repoOfFiles(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\nline two\n", i)), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "files"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=B", "-c", "user.email=b@localhost"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func gitB(b *testing.B, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// plainBranches numbers the branches of plain `git worktree add`.
var plainBranches int

// BenchmarkWorktreeCreate: session/create with worktree: true on a
// repository of 10,000 files (the fake harness, through the binary)
// against `git worktree add` of a new branch alone; each worktree is
// removed again outside the timing.
//
//	go test ./cmd/bridge -run '^$' -bench BenchmarkWorktreeCreate -count=10
func BenchmarkWorktreeCreate(b *testing.B) {
	repo := repoOfFiles(b, 10000)
	b.Run("impl=git", func(b *testing.B) {
		wt := b.TempDir()
		for i := 0; i < b.N; i++ {
			path := filepath.Join(wt, fmt.Sprint(i))
			plainBranches++
			gitB(b, repo, "worktree", "add", "--quiet", "-b", fmt.Sprintf("plain-%d", plainBranches), path, "HEAD")
			b.StopTimer()
			gitB(b, repo, "worktree", "remove", "--force", path)
			b.StartTimer()
		}
	})
	b.Run("impl=bridge", func(b *testing.B) {
		data := b.TempDir()
		c := startBridge(b, data)
		c.initialize(nil)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r := rpctest.Must(c.Client, c.SessionCreate, schema.SessionCreateParams{Harness: "fake", Cwd: repo, Worktree: true})
			b.StopTimer()
			if r.Repo == nil || r.Repo.Worktree == "" {
				b.Fatalf("no worktree: %+v", r)
			}
			gitB(b, repo, "worktree", "remove", "--force", r.Repo.Worktree)
			b.StartTimer()
		}
		b.StopTimer()
		c.exit(true)
	})
}

// BenchmarkWorktreeCreatePaired: the same comparison as
// BenchmarkWorktreeCreate, as paired ratios: each iteration times one
// `git worktree add -b` alone and one session/create with worktree: true
// on the same repository of 10,000 files, back to back (their order
// alternating), and takes the ratio bridge/git of the pair, so that both
// sides of a ratio see the same load. It reports the median ratio and the
// smallest and largest (each worktree is removed outside the timing).
//
//	go test ./cmd/bridge -run '^$' -bench BenchmarkWorktreeCreatePaired -benchtime 12x
func BenchmarkWorktreeCreatePaired(b *testing.B) {
	repo := repoOfFiles(b, 10000)
	wt := b.TempDir()
	data := b.TempDir()
	c := startBridge(b, data)
	c.initialize(nil)
	defer c.exit(true)
	plain := func(i int) time.Duration {
		path := filepath.Join(wt, fmt.Sprint(i))
		plainBranches++
		t0 := time.Now()
		gitB(b, repo, "worktree", "add", "--quiet", "-b", fmt.Sprintf("paired-%d", plainBranches), path, "HEAD")
		d := time.Since(t0)
		gitB(b, repo, "worktree", "remove", "--force", path)
		return d
	}
	viaBridge := func() time.Duration {
		t0 := time.Now()
		r := rpctest.Must(c.Client, c.SessionCreate, schema.SessionCreateParams{Harness: "fake", Cwd: repo, Worktree: true})
		d := time.Since(t0)
		if r.Repo == nil || r.Repo.Worktree == "" {
			b.Fatalf("no worktree: %+v", r)
		}
		gitB(b, repo, "worktree", "remove", "--force", r.Repo.Worktree)
		return d
	}
	ratios := make([]float64, 0, b.N)
	var gitSum, bridgeSum time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var g, br time.Duration
		if i%2 == 0 {
			g = plain(i)
			br = viaBridge()
		} else {
			br = viaBridge()
			g = plain(i)
		}
		gitSum += g
		bridgeSum += br
		ratios = append(ratios, float64(br)/float64(g))
	}
	b.StopTimer()
	sort.Float64s(ratios)
	med := ratios[len(ratios)/2]
	if len(ratios)%2 == 0 {
		med = (ratios[len(ratios)/2-1] + ratios[len(ratios)/2]) / 2
	}
	b.ReportMetric(med, "median-ratio")
	b.ReportMetric(ratios[0], "min-ratio")
	b.ReportMetric(ratios[len(ratios)-1], "max-ratio")
	b.ReportMetric(float64(gitSum.Milliseconds())/float64(b.N), "git-ms/op")
	b.ReportMetric(float64(bridgeSum.Milliseconds())/float64(b.N), "bridge-ms/op")
	b.Logf("ratios (sorted): %.3f", ratios)
}

// BenchmarkSessionDiff: session/diff of a worktree session that changed
// 100 of 10,000 files and added 10 (through the binary) against `git diff`
// of the same worktree alone.
//
//	go test ./cmd/bridge -run '^$' -bench BenchmarkSessionDiff -count=10
func BenchmarkSessionDiff(b *testing.B) {
	repo := repoOfFiles(b, 10000)
	data := b.TempDir()
	c := startBridge(b, data)
	c.initialize(nil)
	r := rpctest.Must(c.Client, c.SessionCreate, schema.SessionCreateParams{Harness: "fake", Cwd: repo, Worktree: true})
	for i := 0; i < 100; i++ {
		p := filepath.Join(r.Repo.Worktree, fmt.Sprintf("d%03d", i), fmt.Sprintf("f%05d.txt", i*100))
		if err := os.WriteFile(p, []byte("changed\n"), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		if err := os.WriteFile(filepath.Join(r.Repo.Worktree, fmt.Sprintf("new%d.txt", i)), []byte("new\n"), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("impl=git", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			gitB(b, r.Repo.Worktree, "diff", r.Repo.BaseCommit)
		}
	})
	b.Run("impl=bridge", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			d := rpctest.Must(c.Client, c.SessionDiff, schema.SessionDiffParams{SessionID: r.SessionID})
			if len(d.Files) != 110 {
				b.Fatalf("diff of %d files, want 110", len(d.Files))
			}
		}
	})
	c.exit(true)
}

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitStatusIgnoresRepositoryCommands: a repository's own configuration
// can name commands git runs (core.fsmonitor, a pager, hooks); Bridge's git
// status runs none of them, and still reports the changes.
func TestGitStatusIgnoresRepositoryCommands(t *testing.T) {
	repo := t.TempDir()
	marker := filepath.Join(t.TempDir(), "marker")
	hook := filepath.Join(t.TempDir(), "fsmonitor.sh")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q")
	git("config", "core.fsmonitor", hook)
	git("config", "core.pager", "touch "+marker+"; cat")
	git("config", "core.hooksPath", filepath.Dir(hook))
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Plain git runs the configured fsmonitor command (the danger).
	plain := exec.Command("git", "-C", repo, "status", "--porcelain")
	plain.Env = append(os.Environ(), "HOME="+t.TempDir())
	_, _ = plain.Output()
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("this git does not run core.fsmonitor; the test cannot show the protection: %v", err)
	}
	os.Remove(marker)

	out, err := gitStatus(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "a.txt") {
		t.Fatalf("git status should report a.txt: %q", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("Bridge's git status ran a command from the repository's configuration")
	}
	if out, err := gitStatus(context.Background(), t.TempDir()); err != nil || out != "" {
		t.Fatalf("outside a repository: %q %v", out, err)
	}
}

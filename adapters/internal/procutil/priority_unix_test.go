//go:build linux

package procutil

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// niceOf reads a process's niceness from /proc (field 19 of stat).
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBackgroundRunsAtLowerPriority: a Background program (a checkpoint's
// fork) and the children it starts run 10 nice steps below Bridge; an
// ordinary one at Bridge's own priority.
func TestBackgroundRunsAtLowerPriority(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	own := niceOf(t, os.Getpid())
	for _, bg := range []bool{false, true} {
		p, err := Start(Spec{Path: sh, Args: []string{"-c", "sleep 30 & wait"}, Background: bg})
		if err != nil {
			t.Fatal(err)
		}
		want := own
		if bg {
			want = min(own+backgroundNice, 19)
		}
		if got := niceOf(t, p.Cmd.Process.Pid); got != want {
			t.Errorf("Background %v: nice %d, want %d", bg, got, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p.Stop(ctx, time.Second)
		cancel()
	}
}

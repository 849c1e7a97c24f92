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

// statField reads field n (1-based, as proc(5) numbers them) of a
// process's or thread's stat line.
func statField(t *testing.T, path string, n int) int {
	t.Helper()
	b, err := os.ReadFile(path + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	v, err := strconv.Atoi(f[n-3])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// niceOf reads a process's niceness from /proc (field 19 of stat).
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	return statField(t, "/proc/"+strconv.Itoa(pid), 19)
}

// policies lists the scheduling policy (field 41 of stat) of every thread
// of every process in process group pgid, by "pid/tid".
func policies(t *testing.T, pgid int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tid := range groupThreads(pgid) {
		// a thread's stat is readable under /proc/TID even when TID is
		// not a process
		out[strconv.Itoa(tid)] = statField(t, "/proc/"+strconv.Itoa(tid), 41)
	}
	return out
}

// TestBackgroundRunsAtLowerPriority: a Background program (a checkpoint's
// fork) and the children it starts run 10 nice steps below Bridge, and an
// Idle one in the idle scheduling class (SCHED_IDLE) as well; an ordinary
// one at Bridge's own priority and class.
func TestBackgroundRunsAtLowerPriority(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	own := niceOf(t, os.Getpid())
	for _, c := range []struct{ bg, idle bool }{{false, false}, {true, false}, {true, true}} {
		bg := c.bg
		p, err := Start(Spec{Path: sh, Args: []string{"-c", "sleep 30 & wait"}, Background: bg, Idle: c.idle})
		if err != nil {
			t.Fatal(err)
		}
		want := own
		if bg {
			want = min(own+backgroundNice, 19)
		}
		if got := niceOf(t, p.Cmd.Process.Pid); got != want {
			t.Errorf("%+v: nice %d, want %d", c, got, want)
		}
		waitForChild(t, p.Cmd.Process.Pid)
		wantPolicy := 0 // SCHED_OTHER
		if c.idle {
			wantPolicy = schedIdle
		}
		pol := policies(t, p.Cmd.Process.Pid)
		if len(pol) < 2 {
			t.Errorf("%+v: threads of the group %v, want the shell and its sleep", c, pol)
		}
		for tid, got := range pol {
			if got != wantPolicy {
				t.Errorf("%+v: thread %s has scheduling policy %d, want %d", c, tid, got, wantPolicy)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p.Stop(ctx, time.Second)
		cancel()
	}
	if err := IdleScheduling(); err != nil {
		t.Errorf("IdleScheduling after an Idle start: %v", err)
	}
}

// waitForChild waits until process pid has a child process (the shell's
// sleep), for at most 10 seconds.
func waitForChild(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if len(groupThreads(pid)) >= 2 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d started no child in 10 s", pid)
}

// TestIdlePriorityReachesARunningGroup: IdlePriority on a program that
// already runs (as OpenCode's fork server is lowered once it answers)
// moves every thread of its group, the children started before included.
func TestIdlePriorityReachesARunningGroup(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Spec{Path: sh, Args: []string{"-c", "sleep 30 & sleep 30 & wait"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p.Stop(ctx, time.Second)
		cancel()
	}()
	for i := 0; len(groupThreads(p.Cmd.Process.Pid)) < 3; i++ {
		if i == 1000 {
			t.Fatal("the shell did not start its two sleeps in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := IdlePriority(p.Cmd); err != nil {
		t.Fatal(err)
	}
	for tid, got := range policies(t, p.Cmd.Process.Pid) {
		if got != schedIdle {
			t.Errorf("thread %s has scheduling policy %d, want SCHED_IDLE (%d)", tid, got, schedIdle)
		}
	}
}

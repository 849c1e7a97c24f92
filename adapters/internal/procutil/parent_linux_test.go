//go:build linux

package procutil

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// When BRIDGE_PROCUTIL_PARENT is set, the test binary plays Bridge: it
// starts a long program through Start, prints its pid and waits to be
// killed.
func init() {
	if os.Getenv("BRIDGE_PROCUTIL_PARENT") == "" {
		return
	}
	p, err := Start(Spec{Path: "/bin/sh", Args: []string{"-c", "exec sleep 120"}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println(p.Cmd.Process.Pid)
	select {}
}

// TestProgramDiesWithBridge: a harness program runs in a process group of
// its own, so a Bridge killed with SIGKILL (by an editor, a test's cleanup,
// the OOM killer) must not leave it running, writing to a home that is being
// removed. Before the parent-death signal, OpenCode servers outlived a
// killed Bridge for minutes.
func TestProgramDiesWithBridge(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe, "-test.run=^$")
	parent.Env = append(os.Environ(), "BRIDGE_PROCUTIL_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = parent.Process.Kill()
		t.Fatalf("the parent printed %q: %v", line, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		_ = parent.Process.Kill()
		t.Fatalf("the parent printed %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("the program %d is not running before its parent is killed", pid)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	// The kernel delivers the signal as the parent exits; the program is
	// reaped by init soon after. Wait for that, boundedly.
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the program %d still runs 30 s after its parent was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie, killed but not yet reaped,
// counts as gone).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestIdleSchedulingKillsNoProgram: asking whether the idle class is
// granted ends none of Bridge's threads. A thread that ends kills every
// program started from it (their parent-death signal follows the thread
// that started them), and the first version of the question tried the class
// on a thread and then ended it: a doctor call killed a running OpenCode
// server. Programs are started from 16 threads, then the question is asked
// (on one of those threads, most likely), and every program must live.
func TestIdleSchedulingKillsNoProgram(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	procs := make([]*Process, n)
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	for i := range procs {
		go func() {
			// Each start on a thread of its own, kept until all started.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			p, err := Start(Spec{Path: sleep, Args: []string{"30"}})
			if err != nil {
				t.Error(err)
			}
			procs[i] = p
			started.Done()
			release.Wait()
		}()
	}
	started.Wait()
	release.Done()
	t.Cleanup(func() {
		for _, p := range procs {
			if p != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				p.Stop(ctx, 10*time.Millisecond)
				cancel()
			}
		}
	})
	time.Sleep(50 * time.Millisecond) // the threads back in the pool
	_ = IdleScheduling()
	time.Sleep(300 * time.Millisecond) // a killed program's exit is seen
	for i, p := range procs {
		if p == nil {
			continue
		}
		if err := syscall.Kill(p.Cmd.Process.Pid, 0); err != nil {
			t.Errorf("program %d (pid %d) is gone after IdleScheduling: %v", i, p.Cmd.Process.Pid, err)
			continue
		}
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.Cmd.Process.Pid) + "/stat")
		if s := string(b); strings.Contains(s, ") Z ") || strings.Contains(s, ") X ") {
			t.Errorf("program %d (pid %d) was killed by IdleScheduling", i, p.Cmd.Process.Pid)
		}
	}
}

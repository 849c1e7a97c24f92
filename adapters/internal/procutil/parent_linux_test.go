//go:build linux

package procutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

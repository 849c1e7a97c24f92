//go:build linux

package adaptertest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// NiceOf reads a running process's niceness from /proc (field 19 of its
// stat line), failing the test when the process is gone or the line is not
// as Linux writes it. Tests of a harness's side processes (a checkpoint's
// fork) use it to check they run below the live session's priority.
func NiceOf(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("reading process %d: %v", pid, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		t.Fatalf("process %d: stat line %q has no command name", pid, s)
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 17 {
		t.Fatalf("process %d: stat line %q is too short", pid, s)
	}
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatalf("process %d: niceness %q: %v", pid, f[16], err)
	}
	return n
}

// ForkNice checks the priorities a checkpoint's fork runs at: the live
// process livePID (named live in a failure, "the live server") at the test
// process's own niceness, which is Bridge's in these tests, and the fork's
// process forkPID (named fork) 10 lower in priority, at most 19 as Linux
// caps it.
func ForkNice(t testing.TB, live string, livePID int, fork string, forkPID int) {
	t.Helper()
	own := NiceOf(t, os.Getpid())
	if got := NiceOf(t, livePID); got != own {
		t.Errorf("%s runs at nice %d, want Bridge's own %d", live, got, own)
	}
	if got, want := NiceOf(t, forkPID), min(own+10, 19); got != want {
		t.Errorf("%s runs at nice %d, want %d", fork, got, want)
	}
}

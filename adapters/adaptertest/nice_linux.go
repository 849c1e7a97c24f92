//go:build linux

package adaptertest

import (
	"os"
	"path/filepath"
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

// GroupIsIdleClass checks that every thread of every process in process
// group pgid (a side process and what it started, named what in a
// failure) runs in the idle scheduling class (SCHED_IDLE, policy 5 in
// field 41 of /proc/TID/stat), and that the group has at least two
// threads.
func GroupIsIdleClass(t testing.TB, what string, pgid int) {
	t.Helper()
	n := 0
	procs, _ := os.ReadDir("/proc")
	for _, pe := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", pe.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+2:])
		if f[2] != strconv.Itoa(pgid) {
			continue
		}
		tasks, _ := os.ReadDir(filepath.Join("/proc", pe.Name(), "task"))
		for _, te := range tasks {
			st, err := os.ReadFile(filepath.Join("/proc", pe.Name(), "task", te.Name(), "stat"))
			if err != nil {
				continue
			}
			tf := strings.Fields(string(st)[strings.LastIndexByte(string(st), ')')+2:])
			n++
			if tf[38] != "5" {
				t.Errorf("%s thread %s/%s has scheduling policy %s, want SCHED_IDLE (5)", what, pe.Name(), te.Name(), tf[38])
			}
		}
	}
	if n < 2 {
		t.Errorf("found %d threads in the %s process's group", n, what)
	}
}

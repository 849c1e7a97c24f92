//go:build linux

package procutil

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// schedIdle is Linux's SCHED_IDLE scheduling policy.
const schedIdle = 5

// setIdle moves one thread to SCHED_IDLE; its nice value is kept.
func setIdle(tid int) error {
	var param struct{ priority int32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), schedIdle, uintptr(unsafe.Pointer(&param))); e != 0 {
		return e
	}
	return nil
}

// idleGroup moves every thread of process group pgid to SCHED_IDLE. A
// policy is per thread, and threads and processes started later inherit
// their starter's, so the group is walked until a pass finds no thread it
// has not moved (one started while the last pass ran).
func idleGroup(pgid int) error {
	done := map[int]bool{}
	for pass := 0; pass < 8; pass++ {
		fresh := false
		for _, tid := range groupThreads(pgid) {
			if done[tid] {
				continue
			}
			done[tid], fresh = true, true
			if err := setIdle(tid); err != nil && !errors.Is(err, syscall.ESRCH) {
				idleRefused.Store(err)
				return err
			}
		}
		if !fresh {
			return nil
		}
	}
	return nil
}

// groupThreads lists the threads of the processes in process group pgid
// (from /proc: field 5 of a process's stat line is its group).
func groupThreads(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var tids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !inGroup(pid, pgid) {
			continue
		}
		tasks, err := os.ReadDir("/proc/" + e.Name() + "/task")
		if err != nil {
			continue
		}
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				tids = append(tids, tid)
			}
		}
	}
	return tids
}

// inGroup reports whether process pid is in process group pgid.
func inGroup(pid, pgid int) bool {
	if pid == pgid {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return false
	}
	f := strings.Fields(s[i+2:])
	return len(f) > 2 && f[2] == strconv.Itoa(pgid)
}

// idleRefused holds the error of the last refused move to SCHED_IDLE.
var idleRefused errValue

type errValue struct {
	mu  sync.Mutex
	err error
}

func (v *errValue) Store(err error) { v.mu.Lock(); v.err = err; v.mu.Unlock() }
func (v *errValue) Load() error     { v.mu.Lock(); defer v.mu.Unlock(); return v.err }

// IdleScheduling reports whether Background programs get the idle
// scheduling class: nil when no program's move to it was refused (none may
// have been tried yet), or the last refusal (such programs then run at nice
// 10 only). It does not try the class on a thread of Bridge's own: the only
// way to give such a thread back is to end it, and ending a thread kills
// every harness program started from it (their parent-death signal
// follows the thread that started them), as the earlier probe did.
func IdleScheduling() error {
	return idleRefused.Load()
}

//go:build linux

package acp_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/core"
)

// pidIn reads the process id from the scripted agent's "pid N" reply.
func pidIn(t *testing.T, reply string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(reply), "pid "))
	if err != nil {
		t.Fatalf("reply %q does not name a process id", reply)
	}
	return pid
}

// TestForkRunsInALowerPriorityProcess: a fork of a live session (the
// scripted agent advertising session/fork) runs in a second agent process,
// ten nice steps below the live session's agent, which keeps Bridge's own
// priority: on a busy machine a checkpoint's fork yields the CPU to the
// live turn.
func TestForkRunsInALowerPriorityProcess(t *testing.T) {
	ctx := testCtx(t)
	h := scriptHost(t, "", "SCRIPTAGENT_FORK=1")
	rec := adaptertest.NewEvents()
	l, err := h.CreateSession(ctx, reqIn(t), rec.Sink)
	if err != nil {
		t.Fatal(err)
	}
	closeLive(t, l)
	if _, err := l.Prompt(ctx, text("pid")); err != nil {
		t.Fatal(err)
	}
	said := ofKind(rec.Entries(), core.KindAssistantMessage)
	if len(said) != 1 {
		t.Fatalf("the live turn said %d messages, want 1", len(said))
	}
	livePID := pidIn(t, field(t, said[0], "text").(string))

	fk, ok := l.(core.Forker)
	if !ok {
		t.Fatal("the live session of an agent advertising session/fork is not a core.Forker")
	}
	f, err := fk.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := f.Ask(ctx, "pid")
	if err != nil {
		t.Fatal(err)
	}
	forkPID := pidIn(t, reply.Text)
	if forkPID == livePID {
		t.Fatalf("the fork ran in the live session's agent process %d", livePID)
	}
	adaptertest.ForkNice(t, "the live agent", livePID, "the fork's agent", forkPID)
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Close stops the side process, and only it.
	deadline := time.Now().Add(10 * time.Second)
	for processExists(forkPID) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if processExists(forkPID) {
		t.Errorf("the fork's agent process %d still runs after Close", forkPID)
	}
	if !processExists(livePID) {
		t.Errorf("the live agent process %d ended with the fork", livePID)
	}
}

// processExists reports whether pid names a running (not zombie) process.
func processExists(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+2:], "Z")
}

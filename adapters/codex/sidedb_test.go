package codex

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/procutil"
	"github.com/bridge-dev/bridge/core"
)

// TestSideDBFoldersOfEndedBridgesAreRemoved: the first side database
// folder a Host makes removes the folders of Bridge processes that have
// ended (killed before they removed their own), and keeps those of
// running ones and this process's.
func TestSideDBFoldersOfEndedBridgesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	running := exec.Command("sleep", "60")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { running.Process.Kill(); running.Wait() })
	mk := func(pid int) string {
		d := filepath.Join(dir, fmt.Sprintf("%s%d-123", sideDBPrefix, pid))
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	gone, kept, own := mk(ended.Process.Pid), mk(running.Process.Pid), mk(os.Getpid())
	other := filepath.Join(dir, "not-a-side-folder")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	h := New(Config{StateDir: dir})
	fresh, err := h.sideDBDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{kept, own, other, fresh} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it kept", filepath.Base(d), err)
		}
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the ended Bridge's folder %s is still there (%v)", filepath.Base(gone), err)
	}
	if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the new folder: %v, mode %v, want owner-only", err, st.Mode().Perm())
	}
}

// TestDoctorSaysHowTheSideProcessRuns: doctor's session.fork detail names
// the side process's priority and databases, and how long an idle one is
// kept, as configured.
func TestDoctorSaysHowTheSideProcessRuns(t *testing.T) {
	detail := func(cfg Config) string {
		for _, c := range New(cfg).capabilities(map[string]bool{"thread/fork": true}, "") {
			if c.Name == core.CapSessionFork {
				return c.Detail
			}
		}
		t.Fatal("no session.fork capability")
		return ""
	}
	idle := "idle scheduling class and nice 10, with databases of its own"
	if err := procutil.IdleScheduling(); err != nil {
		idle = "the idle scheduling class was refused: " + err.Error()
	}
	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{Config{}, []string{"nice 10, on CODEX_HOME's databases", "until idle for 3m0s"}},
		{Config{StateDir: t.TempDir(), SpareIdle: 90 * time.Second}, []string{idle, "until idle for 1m30s"}},
		{Config{StateDir: t.TempDir(), SpareIdle: -1}, []string{"stopped after each fork"}},
	} {
		got := detail(c.cfg)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%+v: detail %q lacks %q", c.cfg, got, w)
			}
		}
	}
}

package codex

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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

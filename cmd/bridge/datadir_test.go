package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataDirPrecedence: --data-dir, then BRIDGE_DATA_DIR, then
// initializationOptions.dataDir, then $XDG_DATA_HOME/bridge, then
// ~/.local/share/bridge.
func TestDataDirPrecedence(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, c := range []struct {
		flag, env, init, xdg, want string
	}{
		{"/f", "/e", "/i", "/x", "/f"},
		{"", "/e", "/i", "/x", "/e"},
		{"", "", "/i", "/x", "/i"},
		{"", "", "", "/x", "/x/bridge"},
		{"", "", "", "", filepath.Join(home, ".local", "share", "bridge")},
	} {
		t.Setenv("BRIDGE_DATA_DIR", c.env)
		t.Setenv("XDG_DATA_HOME", c.xdg)
		got, err := resolveDataDir(c.flag, c.init)
		if err != nil || got != c.want {
			t.Errorf("flag %q env %q init %q xdg %q: %q %v, want %q", c.flag, c.env, c.init, c.xdg, got, err, c.want)
		}
	}
}

// TestDataDirAfterCommand: --data-dir works after the command too.
func TestDataDirAfterCommand(t *testing.T) {
	dir := t.TempDir()
	out, stderr, code := runCLI(t, nil, "sessions", "--data-dir", dir, "--json")
	if code != 0 || !strings.Contains(out, `"items"`) {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, DatabaseFile)); err != nil {
		t.Fatal(err)
	}
}

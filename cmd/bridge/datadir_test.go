package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
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
		{"", "", "", "relative/xdg", filepath.Join(home, ".local", "share", "bridge")},
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

// TestExistingDataDirModeUnchanged runs every command on existing folders
// (0755, and 1777 like /tmp) named by --data-dir: none changes the folder's
// mode. A folder Bridge creates is 0700 (TestDataDirPermissions).
func TestExistingDataDirModeUnchanged(t *testing.T) {
	commands := [][]string{
		{"version"}, {"schema"}, {"doctor", "--harness", "fake"}, {"sessions"}, {"sessions", "--json"},
		{"history", "s_none"}, {"checkpoint", "s_none"}, {"import", "--harness", "fake", "/nonexistent"},
		{"migrate", "preview", "s_none"}, {"migrate", "execute", "p_none"}, {"serve"},
	}
	for _, mode := range []os.FileMode{0o755, 0o777 | os.ModeSticky} {
		dir := filepath.Join(t.TempDir(), "existing")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		for _, args := range commands {
			if args[0] == "serve" {
				c := startBridge(t, dir)
				c.initialize(nil)
				rpctest.Must(c.Client, c.SessionList, schema.SessionListParams{})
				if code := c.exit(true); code != 0 {
					t.Fatalf("serve: exit %d", code)
				}
			} else {
				runCLI(t, nil, append([]string{"--data-dir", dir}, args...)...)
			}
			st, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode() & (os.ModePerm | os.ModeSticky); got != mode {
				t.Fatalf("after bridge %s the folder's mode is %v, want %v", strings.Join(args, " "), got, mode)
			}
		}
	}
}

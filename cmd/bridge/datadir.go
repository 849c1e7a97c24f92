package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DatabaseFile is the name of the SQLite database in the data directory.
const DatabaseFile = "bridge.db"

// resolveDataDir picks the data directory: the --data-dir flag, then
// BRIDGE_DATA_DIR, then the client's initializationOptions.dataDir, then
// $XDG_DATA_HOME/bridge (an absolute XDG_DATA_HOME only), then
// ~/.local/share/bridge.
func resolveDataDir(flagValue, initOption string) (string, error) {
	dir := flagValue
	if dir == "" {
		dir = os.Getenv("BRIDGE_DATA_DIR")
	}
	if dir == "" {
		dir = initOption
	}
	if dir == "" {
		// The XDG specification: a relative path is invalid and ignored.
		if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
			dir = filepath.Join(x, "bridge")
		}
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("data directory: no --data-dir, BRIDGE_DATA_DIR or XDG_DATA_HOME, and no home directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "share", "bridge")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data directory %q: %w", dir, err)
	}
	return abs, nil
}

// ensureDataDir creates the data directory owner-only (0700) when it does
// not exist. An existing folder is used as it is: Bridge never changes the
// permissions of what it did not create (its own files in it are 0600).
func ensureDataDir(dir string) error {
	st, err := os.Stat(dir)
	if err == nil {
		if !st.IsDir() {
			return fmt.Errorf("data directory %s is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("data directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	// MkdirAll applied the umask; the folder is Bridge's own.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("data directory permissions: %w", err)
	}
	return nil
}

// Package adaptertest holds what adapter tests share: locating the real
// harness programs and (in conformance.go) the suite every adapter passes.
package adaptertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// RepoRoot returns the module root (the folder holding go.mod).
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// FindBinary locates a harness program for an end-to-end test: the
// environment variable BRIDGE_<NAME>_BIN, then node_modules/.bin/<name> in
// the repository (installed by .ci/run from package.json), then PATH. A
// program that cannot be found fails the test: it never skips.
func FindBinary(tb testing.TB, name string) string {
	tb.Helper()
	env := "BRIDGE_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name)) + "_BIN"
	if p := os.Getenv(env); p != "" {
		return p
	}
	local := filepath.Join(RepoRoot(tb), "node_modules", ".bin", name)
	if _, err := os.Stat(local); err == nil {
		return local
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	tb.Fatalf("harness program %q not found (set %s, or run `bash .ci/test`, which installs the pinned programs)", name, env)
	return ""
}

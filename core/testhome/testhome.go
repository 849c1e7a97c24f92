// Package testhome isolates a test binary's home: HOME and the XDG base
// directories point at a fresh temporary directory, so that no test, and
// no program a test starts, writes into the real home. Every test package
// that starts programs or writes state uses it from TestMain
// (`func TestMain(m *testing.M) { testhome.Main(m) }`). Standard library
// only, so that any package's tests may import it.
package testhome

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Isolate points HOME and the XDG base directories of the test process
// at a fresh temporary directory, so that no test, and no harness program a
// test starts (they inherit the environment), writes into the real home.
// The Go tool caches and the CI cache keep their real places (set
// explicitly, so that a `go` or a lookup run by a test still finds them).
// Call it from TestMain before m.Run; the returned cleanup removes the
// directory.
func Isolate() (cleanup func(), err error) {
	if h := os.Getenv("HOME"); h != "" && os.Getenv("BRIDGE_TEST_HOME") == h {
		// A test binary started by a test (a crash or multi-process test)
		// keeps its parent's isolated home.
		return func() {}, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, err
	}
	keep := map[string]string{
		"GOCACHE":         filepath.Join(cache, "go-build"),
		"GOPATH":          filepath.Join(home, "go"),
		"BRIDGE_CI_CACHE": filepath.Join(home, ".cache", "bridge-ci"),
	}
	for k, v := range keep {
		if os.Getenv(k) == "" {
			if err := os.Setenv(k, v); err != nil {
				return nil, err
			}
		}
	}
	if os.Getenv("GOMODCACHE") == "" {
		if err := os.Setenv("GOMODCACHE", filepath.Join(filepath.SplitList(os.Getenv("GOPATH"))[0], "pkg", "mod")); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "bridge-test-home-")
	if err != nil {
		return nil, err
	}
	for k, sub := range map[string]string{
		"HOME": "", "XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache",
		"XDG_DATA_HOME": ".local/share", "XDG_STATE_HOME": ".local/state",
	} {
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, err
		}
		if err := os.Setenv(k, p); err != nil {
			return nil, err
		}
	}
	if err := os.Setenv("BRIDGE_TEST_HOME", dir); err != nil {
		return nil, err
	}
	return func() { _ = os.RemoveAll(dir) }, nil
}

// Main runs a test package with its home isolated (Isolate): use it as
// `func TestMain(m *testing.M) { testhome.Main(m) }`.
func Main(m *testing.M) {
	cleanup, err := Isolate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "isolating the test home:", err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

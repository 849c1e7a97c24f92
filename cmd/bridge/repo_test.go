package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
)

// TestNoReferencesOutsideTheRepository: the design lives in
// ARCHITECTURE.md; no file of the repository points a reader at a design
// document or reference folder that a clone does not have.
func TestNoReferencesOutsideTheRepository(t *testing.T) {
	root := adaptertest.RepoRoot(t)
	banned := []string{"../" + "shared", "shared/" + "reference", "DESIGN " + "§", "DESIGN" + ".md"}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".mjs", ".js", ".ts", ".json", ".sql", ".txt", ".html", ".css":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range banned {
			if strings.Contains(string(b), s) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s refers to %q, outside the repository", rel, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "ARCHITECTURE.md")); err != nil {
		t.Fatalf("ARCHITECTURE.md: %v", err)
	}
}

// TestCIInstallWritesNothingUnderHome runs the install steps of README's
// test command (.ci/install, which .ci/test runs first) as a fresh machine
// would, with an empty HOME and no XDG folders: both npm package sets are
// installed into an empty package-set cache, so npm and every package's
// install script run (opencode-ai's postinstall runs `opencode --version`,
// which writes its cache, data and state folders). Only the download caches
// are warm (npm's, offline; Go's modules, GOPROXY=off), so the test talks
// to no registry. Nothing may appear under HOME.
// (.ci/run proves the same for the whole test command on every CI run: it
// runs it with a fresh, empty HOME.)
func TestCIInstallWritesNothingUnderHome(t *testing.T) {
	t.Parallel()
	root := adaptertest.RepoRoot(t)
	tree := t.TempDir()
	for _, f := range []string{".ci/env", ".ci/install", ".ci/dsh/package.json", ".ci/dsh/package-lock.json",
		".ci/dsh/.npmrc", "package.json", "package-lock.json", "go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tree, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ciCache := os.Getenv("BRIDGE_CI_CACHE")
	npmCache := os.Getenv("npm_config_cache")
	if npmCache == "" {
		npmCache = filepath.Join(ciCache, "npm")
	}
	if _, err := os.Stat(filepath.Join(npmCache, "_cacache")); err != nil {
		t.Fatalf("npm's download cache %s is not warm (run bash .ci/test once): %v", npmCache, err)
	}
	home, packageSets := t.TempDir(), t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "XDG_"), strings.HasPrefix(strings.ToLower(k), "npm_config_"),
			k == "HOME", k == "BRIDGE_CI_CACHE", k == "GOPROXY", k == "GOFLAGS", k == "GOPATH":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "BRIDGE_CI_CACHE="+packageSets, "npm_config_cache="+npmCache,
		"npm_config_offline=true", "GOPROXY=off", "GOMODCACHE="+os.Getenv("GOMODCACHE"),
		// Go's telemetry counters, as .ci/test keeps them (a child of the
		// go command may still write them after the install ends).
		"XDG_CONFIG_HOME="+filepath.Join(ciCache, "xdg-config"))
	cmd := exec.Command("bash", ".ci/install")
	cmd.Dir, cmd.Env = tree, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		hint := ""
		if strings.Contains(string(out), "GOPROXY=off") {
			hint = " (Go's module cache " + os.Getenv("GOMODCACHE") + " lacks a module go.mod names: bash .ci/test fills it with go mod download)"
		}
		t.Fatalf("bash .ci/install with an empty HOME: %v%s\n%s", err, hint, out)
	}
	for _, bin := range []string{"node_modules/.bin/opencode", ".ci/dsh/node_modules/@deepseek-ai/dsh/lib/bin.js"} {
		if _, err := os.Stat(filepath.Join(tree, bin)); err != nil {
			t.Errorf("after the install: %v\n%s", err, out)
		}
	}
	var created []string
	_ = filepath.WalkDir(home, func(p string, _ fs.DirEntry, _ error) error {
		if p != home {
			created = append(created, strings.TrimPrefix(p, home+"/"))
		}
		return nil
	})
	if len(created) > 0 {
		t.Fatalf("the install wrote under HOME: %s\n%s", strings.Join(created, ", "), out)
	}
}

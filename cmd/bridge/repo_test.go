package main

import (
	"io/fs"
	"os"
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

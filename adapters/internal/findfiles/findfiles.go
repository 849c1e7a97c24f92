// Package findfiles lists files under a folder for transcript discovery:
// regular files only, symbolic links never followed, folders that cannot
// be read skipped, depth bounded.
package findfiles

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Under returns, sorted, the regular files under root at most maxDepth
// folders down (1: root's own files) whose path relative to root satisfies
// match. A root that does not exist yields nothing and no error.
func Under(ctx context.Context, root string, maxDepth int, match func(rel string) bool) ([]string, error) {
	if root == "" {
		return nil, nil
	}
	st, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, nil
	}
	var out []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if d != nil && d.IsDir() && p != root {
				return fs.SkipDir // unreadable folder: skip it
			}
			return nil
		}
		rel, rerr := filepath.Rel(root, p)
		if rerr != nil {
			return nil
		}
		depth := 0
		if rel != "." {
			depth = strings.Count(rel, string(filepath.Separator)) + 1
		}
		if d.IsDir() {
			if depth >= maxDepth {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !match(filepath.ToSlash(rel)) {
			return nil
		}
		out = append(out, p)
		return nil
	})
	sort.Strings(out)
	return out, err
}

// Env returns the value of key in env (the last "K=V" wins), else in the
// process environment.
func Env(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return os.Getenv(key)
}

// Home is HOME from env, else the user's home folder.
func Home(env []string) string {
	if h := Env(env, "HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

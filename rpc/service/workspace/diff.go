package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
	"github.com/bridge-dev/bridge/schema"
)

// maxDiffBytes bounds the unified diff session/diff returns.
const maxDiffBytes = 8 << 20

// maxUntracked bounds the new untracked files a diff shows one by one.
const maxUntracked = 1000

// Diff gives, for session/diff, a session's changes since the commit it started from
// (or since a checkpoint) as a unified diff with per-file stats: git diff
// against the base commit in the session's worktree, or in the shared cwd
// (then saying that others may have changed the same files), plus the new
// untracked files. A worktree deleted outside Bridge leaves what was
// committed on its branch.
func (w *Workspace) Diff(ctx context.Context, sess core.Session, p schema.SessionDiffParams) (schema.SessionDiffResult, error) {
	r, ok, err := w.Repo(ctx, sess.ID)
	if err != nil {
		return schema.SessionDiffResult{}, err
	}
	if !ok {
		return schema.SessionDiffResult{}, core.Errorf(core.CodeInvalid, "session %s did not start in a git repository (or before this Bridge recorded repositories): there is no base commit to compare with", sess.ID)
	}
	out := schema.SessionDiffResult{BaseCommit: r.BaseCommit, Branch: r.Branch, Dir: sess.Cwd, Files: []schema.DiffFile{}}
	var notes []string
	target := "" // compare the working tree
	switch {
	case r.Worktree == "":
		out.Shared = true
		notes = append(notes, "the session works in a shared folder: this is every change there since the base commit, other sessions' and people's included")
	case r.Removed || !exists(r.Worktree):
		out.Dir, target = r.Repo, r.Branch
		notes = append(notes, fmt.Sprintf("the worktree is gone (%s): this is what was committed on branch %s", map[bool]string{true: "archived", false: "deleted outside Bridge"}[r.Removed], r.Branch))
	default:
		out.Dir = r.Worktree
	}
	if p.Since != "" && p.Since != "start" {
		base, note, err := w.checkpointBase(ctx, sess.ID, p.Since, out.Dir, r)
		if err != nil {
			return schema.SessionDiffResult{}, err
		}
		out.BaseCommit = base
		notes = append(notes, note)
	}
	args := []string{out.BaseCommit}
	if target != "" {
		args = []string{out.BaseCommit, target}
	}
	files, err := w.diffStats(ctx, out.Dir, args)
	if err != nil {
		return schema.SessionDiffResult{}, err
	}
	diff, err := w.git(ctx, out.Dir, append([]string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames"}, append(args, "--")...)...)
	if err != nil {
		return schema.SessionDiffResult{}, fmt.Errorf("git diff in %s: %w", core.Quote(out.Dir), err)
	}
	var b strings.Builder
	b.WriteString(diff)
	if target == "" {
		extra, more, err := w.untrackedDiff(ctx, out.Dir, &b)
		if err != nil {
			return schema.SessionDiffResult{}, err
		}
		files = append(files, extra...)
		if more > 0 {
			notes = append(notes, fmt.Sprintf("%d more new untracked files are not shown", more))
		}
	}
	out.Files = files
	out.Diff = b.String()
	if len(out.Diff) > maxDiffBytes {
		out.Diff, out.Truncated = out.Diff[:maxDiffBytes], true
	}
	out.Note = strings.Join(notes, "; ")
	return out, nil
}

// diffStats lists the changed files of git diff args (numstat).
func (w *Workspace) diffStats(ctx context.Context, dir string, args []string) ([]schema.DiffFile, error) {
	out, err := w.git(ctx, dir, append([]string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--numstat", "-z", "--no-renames"}, append(args, "--")...)...)
	if err != nil {
		return nil, fmt.Errorf("git diff --numstat in %s: %w", core.Quote(dir), err)
	}
	var files []schema.DiffFile
	for _, rec := range strings.Split(out, "\x00") {
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		files = append(files, numstatFile(parts))
	}
	return files, nil
}

// numstatFile reads one numstat record ("-" counts for a binary file).
func numstatFile(parts []string) schema.DiffFile {
	f := schema.DiffFile{Path: parts[2]}
	if parts[0] == "-" {
		f.Binary = true
		return f
	}
	f.Added, _ = strconv.Atoi(parts[0])
	f.Removed, _ = strconv.Atoi(parts[1])
	return f
}

// maxUntrackedBytes bounds a new untracked file a diff reads.
const maxUntrackedBytes = 1 << 20

// untrackedDiff appends to b the diff of each new untracked file of the
// repository holding dir (not ignored), written here as git writes a new
// file's diff (one git process lists them, none runs per file), and
// returns their stats and how many were left out. A file that is not
// regular or over maxUntrackedBytes is listed without its lines.
func (w *Workspace) untrackedDiff(ctx context.Context, dir string, b *strings.Builder) ([]schema.DiffFile, int, error) {
	list, err := w.git(ctx, dir, "ls-files", "--others", "--exclude-standard", "--full-name", "-z", "--", ":/")
	if err != nil {
		return nil, 0, fmt.Errorf("git ls-files in %s: %w", core.Quote(dir), err)
	}
	var top string
	var files []schema.DiffFile
	more := 0
	for _, path := range strings.Split(list, "\x00") {
		if path == "" {
			continue
		}
		if len(files) >= maxUntracked {
			more++
			continue
		}
		if top == "" {
			if top, err = w.git(ctx, dir, "rev-parse", "--show-toplevel"); err != nil {
				return nil, 0, err
			}
		}
		f := schema.DiffFile{Path: path, Untracked: true}
		data, err := inputfile.ReadFile(ctx, filepath.Join(top, filepath.FromSlash(path)), "new file", maxUntrackedBytes)
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			f.Binary = true
			files = append(files, f)
			if b.Len() < maxDiffBytes {
				fmt.Fprintf(b, "diff --git a/%s b/%s\nnew file mode 100644\nBinary files /dev/null and b/%s differ\n", path, path, path)
			}
			continue
		}
		text := string(data)
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		f.Added = len(lines)
		files = append(files, f)
		if b.Len() >= maxDiffBytes {
			continue
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
		fmt.Fprintf(b, "diff --git a/%s b/%s\nnew file mode 100644\n", path, path)
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(b, "--- /dev/null\n+++ b/%s\n@@ -0,0 +1", path)
		if len(lines) != 1 {
			fmt.Fprintf(b, ",%d", len(lines))
		}
		b.WriteString(" @@\n")
		for _, l := range lines {
			b.WriteString("+")
			b.WriteString(l)
		}
		if !strings.HasSuffix(text, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
	return files, more, nil
}

// checkpointBase is the base of a diff since checkpoint entryID of
// sessionID: the last commit in dir made before the checkpoint was
// written, not before the session's own base.
func (w *Workspace) checkpointBase(ctx context.Context, sessionID, entryID, dir string, r core.SessionRepo) (string, string, error) {
	e, err := w.opts.Store.GetEntry(ctx, entryID)
	if errors.Is(err, core.ErrNotFound) || (err == nil && (e.SessionID != sessionID || e.Kind != core.KindCheckpoint)) {
		return "", "", core.InvalidField("since", "since %s is neither \"start\" nor a checkpoint entry of session %s", core.Quote(entryID), sessionID)
	}
	if err != nil {
		return "", "", err
	}
	ref := "HEAD"
	if r.Branch != "" {
		ref = r.Branch
	}
	at := strconv.FormatInt(e.CreatedAt.Unix(), 10)
	base, err := w.git(ctx, dir, "rev-list", "-1", "--before="+at, ref, "^"+r.BaseCommit+"^@")
	if err != nil {
		return "", "", fmt.Errorf("git rev-list in %s: %w", core.Quote(dir), err)
	}
	if base == "" {
		base = r.BaseCommit
	}
	return base, fmt.Sprintf("since checkpoint %s: from %.12s, the last commit before it (changes not committed by then count as after it)", entryID, base), nil
}

func exists(path string) bool {
	_, err := os.Stat(filepath.Clean(path))
	return err == nil
}

// Package workspace is a session's git workspace (ARCHITECTURE.md,
// Worktrees and diffs): the repository and commit a session starts from,
// its own worktree, and session/diff. It is git plumbing over the Store's
// core.RepoStore and no live session: the service calls it. A session
// created in a git repository has its repository and the commit it started
// from recorded (core.SessionRepo); with worktree: true (or a preset's
// worktree key) it runs in a git worktree of its own, on a new branch
// bridge/<session id>, under Options.Dir.
// Archiving removes the worktree and keeps the branch. Git runs through
// Options.Git (the binary's fixed path, no hooks, no repository
// configuration commands, a timeout).
package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// Git runs git in dir with args and returns its stdout; a failure's error
// carries git's stderr.
type Git func(ctx context.Context, dir string, args ...string) ([]byte, error)

// Logger takes the log lines of work that failed without failing its
// request (removing an unused worktree).
type Logger interface {
	Log(level int, msg string)
}

// Options configures a Workspace.
type Options struct {
	// Store holds the record: its core.RepoStore (when it is one) keeps
	// sessions' repositories, and session/diff --since reads checkpoints.
	Store core.Store
	// Git runs git; nil: sessions have no repository features.
	Git Git
	// Dir is where sessions' worktrees are made.
	Dir string
	Log Logger
}

// Workspace makes, finds and removes sessions' worktrees and diffs them.
type Workspace struct {
	opts Options
}

// New returns a Workspace.
func New(opts Options) *Workspace { return &Workspace{opts: opts} }

// errNotRepo: the directory is in no git repository.
var errNotRepo = errors.New("not in a git repository")

// git runs git and returns its output without the trailing newline.
func (w *Workspace) git(ctx context.Context, dir string, args ...string) (string, error) {
	if w.opts.Git == nil {
		return "", core.Errorf(core.CodeUnavailable, "git is not available to this Bridge")
	}
	out, err := w.opts.Git(ctx, dir, args...)
	if err != nil && strings.Contains(err.Error(), "not a git repository") {
		return "", errNotRepo
	}
	return strings.TrimRight(string(out), "\n"), err
}

// repoOf returns the top level of the repository holding dir, dir's path
// within it ("" at the top) and the commit HEAD names; errNotRepo outside
// a repository.
func (w *Workspace) repoOf(ctx context.Context, dir string) (top, prefix, head string, err error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", "", "", core.InvalidField("cwd", "cwd %s is not a directory", core.Quote(dir))
	}
	out, err := w.git(ctx, dir, "rev-parse", "--show-toplevel", "--show-prefix")
	if err != nil {
		return "", "", "", err
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 1 || lines[0] == "" {
		return "", "", "", errNotRepo
	}
	top = lines[0]
	if len(lines) > 1 {
		prefix = strings.TrimSuffix(lines[1], "/")
	}
	head, err = w.git(ctx, top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil || head == "" {
		return "", "", "", core.InvalidField("cwd", "the repository %s has no commit yet: a session's worktree and diff start from one", core.Quote(top))
	}
	return top, prefix, head, nil
}

// Start records, before a session's harness starts, the repository of
// cwd and its HEAD, and with worktree makes the session's own worktree. It
// returns the cwd the harness is to run in. Outside a repository a shared
// session records nothing, and a session asking for a worktree is refused.
func (w *Workspace) Start(ctx context.Context, sessionID, cwd string, worktree bool) (core.SessionRepo, string, error) {
	if w.opts.Git == nil || w.repoStore() == nil {
		if worktree {
			return core.SessionRepo{}, "", core.Errorf(core.CodeUnavailable, "session/create with worktree: this Bridge has no git or no store for worktrees")
		}
		return core.SessionRepo{}, cwd, nil
	}
	top, prefix, head, err := w.repoOf(ctx, cwd)
	switch {
	case errors.Is(err, errNotRepo) && worktree:
		return core.SessionRepo{}, "", core.InvalidField("cwd", "cwd %s is not inside a git repository: a session with worktree: true needs one (it is never run in the shared folder instead)", core.Quote(cwd))
	case err != nil && !worktree:
		return core.SessionRepo{}, cwd, nil // no repository: nothing to record, no diff later
	case err != nil:
		return core.SessionRepo{}, "", err
	}
	r := core.SessionRepo{SessionID: sessionID, Repo: top, BaseCommit: head}
	if !worktree {
		return r, cwd, nil
	}
	dirty, err := w.git(ctx, top, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return core.SessionRepo{}, "", fmt.Errorf("git status of %s: %w", core.Quote(top), err)
	}
	parent := w.opts.Dir
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return core.SessionRepo{}, "", fmt.Errorf("make the worktree folder: %w", err)
	}
	r.Worktree = filepath.Join(parent, sessionID)
	r.Branch = "bridge/" + sessionID
	r.SourceDirty = dirty != ""
	if _, err := w.git(ctx, top, "worktree", "add", "--quiet", "-b", r.Branch, r.Worktree, head); err != nil {
		return core.SessionRepo{}, "", core.E(core.CodeHarness, fmt.Sprintf("git worktree add for session %s", sessionID), err)
	}
	return r, filepath.Join(r.Worktree, filepath.FromSlash(prefix)), nil
}

// repoStore is the store's core.RepoStore, or nil.
func (w *Workspace) repoStore() core.RepoStore {
	rs, _ := w.opts.Store.(core.RepoStore)
	return rs
}

// Save records r, a session's repository Start returned.
func (w *Workspace) Save(ctx context.Context, r core.SessionRepo) error {
	rs := w.repoStore()
	if rs == nil {
		return core.Errorf(core.CodeUnavailable, "this Bridge's store keeps no repositories")
	}
	return rs.SaveSessionRepo(ctx, r)
}

// Repo returns what is recorded of sessionID's repository.
func (w *Workspace) Repo(ctx context.Context, sessionID string) (core.SessionRepo, bool, error) {
	rs := w.repoStore()
	if rs == nil {
		return core.SessionRepo{}, false, nil
	}
	m, err := rs.SessionRepos(ctx, sessionID)
	if err != nil {
		return core.SessionRepo{}, false, err
	}
	r, ok := m[sessionID]
	return r, ok, nil
}

// Drop undoes Start's worktree when the session could not be
// started: the worktree and its branch go (nothing was done in them).
func (w *Workspace) Drop(ctx context.Context, r core.SessionRepo) {
	if r.Worktree == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if _, err := w.git(ctx, r.Repo, "worktree", "remove", "--force", r.Worktree); err != nil {
		w.opts.Log.Log(2, fmt.Sprintf("session %s: removing the unused worktree %s: %v", r.SessionID, r.Worktree, err))
		return
	}
	if _, err := w.git(ctx, r.Repo, "branch", "-D", "--quiet", r.Branch); err != nil {
		w.opts.Log.Log(2, fmt.Sprintf("session %s: removing the unused branch %s: %v", r.SessionID, r.Branch, err))
	}
}

// Gone refuses to run a session whose worktree was deleted outside
// Bridge.
func (w *Workspace) Gone(ctx context.Context, sessionID string) error {
	r, ok, err := w.Repo(ctx, sessionID)
	if err != nil || !ok || r.Worktree == "" || r.Removed {
		return err
	}
	if _, err := os.Stat(r.Worktree); errors.Is(err, os.ErrNotExist) {
		return core.Errorf(core.CodeNotFound, "session %s: its worktree %s was deleted outside Bridge, so the session cannot run; its branch %s is kept (session/diff still shows what was committed on it; archiving the session tidies git's list of worktrees)",
			sessionID, core.Quote(r.Worktree), r.Branch)
	}
	return nil
}

// Archive removes an archived session's worktree and keeps its
// branch. Work left uncommitted in the worktree is committed on the
// branch first (as Bridge), so that removing the worktree loses nothing.
// A worktree deleted outside Bridge is pruned from git's list.
func (w *Workspace) Archive(ctx context.Context, sessionID string) error {
	r, ok, err := w.Repo(ctx, sessionID)
	if err != nil || !ok || r.Worktree == "" || r.Removed {
		return err
	}
	if _, err := os.Stat(r.Worktree); errors.Is(err, os.ErrNotExist) {
		if _, err := w.git(ctx, r.Repo, "worktree", "prune"); err != nil {
			return err
		}
	} else {
		st, err := w.git(ctx, r.Worktree, "status", "--porcelain", "--untracked-files=normal")
		if err != nil {
			return err
		}
		if st != "" {
			if _, err := w.git(ctx, r.Worktree, "add", "--all"); err != nil {
				return err
			}
			if _, err := w.git(ctx, r.Worktree, "-c", "user.name=Bridge", "-c", "user.email=bridge@localhost",
				"commit", "--quiet", "--no-verify", "-m", "Bridge: work left uncommitted when session "+sessionID+" was archived"); err != nil {
				return err
			}
		}
		if _, err := w.git(ctx, r.Repo, "worktree", "remove", "--force", r.Worktree); err != nil {
			return err
		}
	}
	r.Removed = true
	return w.repoStore().SaveSessionRepo(ctx, r)
}

// Repos returns what is recorded of the repositories of sessions, in one
// store query.
func (w *Workspace) Repos(ctx context.Context, sessions []core.Session) (map[string]core.SessionRepo, error) {
	rs := w.repoStore()
	if rs == nil || len(sessions) == 0 {
		return nil, nil
	}
	ids := make([]string, len(sessions))
	for i, x := range sessions {
		ids[i] = x.ID
	}
	return rs.SessionRepos(ctx, ids...)
}

// Wire is r in the contract's shape.
func Wire(r core.SessionRepo) *schema.SessionRepo {
	return &schema.SessionRepo{Root: r.Repo, BaseCommit: r.BaseCommit, Worktree: r.Worktree, Branch: r.Branch,
		Removed: r.Removed, SourceDirty: r.SourceDirty}
}

package core

import "context"

// SessionRepo is what Bridge recorded of a session's git repository when
// the session started (ARCHITECTURE.md, Worktrees and diffs).
type SessionRepo struct {
	SessionID string `json:"sessionId"`
	// Repo is the top level of the repository holding the cwd the session
	// was created in.
	Repo string `json:"repo"`
	// Worktree is the session's own worktree; "" when the session works
	// in the shared cwd.
	Worktree string `json:"worktree,omitempty"`
	// Branch is the worktree's branch.
	Branch string `json:"branch,omitempty"`
	// BaseCommit is the commit the session started from (HEAD then).
	BaseCommit string `json:"baseCommit"`
	// Removed is true once the worktree was removed (the session was
	// archived); its branch stays.
	Removed bool `json:"removed,omitempty"`
	// SourceDirty is true when the cwd had uncommitted changes as the
	// worktree was made from its HEAD (the worktree does not have them).
	SourceDirty bool `json:"sourceDirty,omitempty"`
}

// RepoStore is implemented by stores that keep sessions' repositories.
type RepoStore interface {
	// SaveSessionRepo records r, replacing what was recorded of its
	// session.
	SaveSessionRepo(ctx context.Context, r SessionRepo) error
	// SessionRepos returns what is recorded of the sessions ids, by
	// session id (sessions with nothing recorded are absent).
	SessionRepos(ctx context.Context, ids ...string) (map[string]SessionRepo, error)
}

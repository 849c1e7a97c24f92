package storage

import (
	"context"
	"fmt"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

var _ core.RepoStore = (*DB)(nil)

// SaveSessionRepo implements core.RepoStore.
func (db *DB) SaveSessionRepo(ctx context.Context, r core.SessionRepo) error {
	return db.submit(ctx, func(ctx context.Context, w *txWriter) error {
		_, err := w.q.ExecContext(ctx, `INSERT INTO session_repos (session_id, repo, worktree, branch, base_commit, removed,
			source_dirty) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (session_id) DO UPDATE SET repo = excluded.repo, worktree = excluded.worktree,
			branch = excluded.branch, base_commit = excluded.base_commit, removed = excluded.removed,
			source_dirty = excluded.source_dirty`,
			r.SessionID, r.Repo, r.Worktree, r.Branch, r.BaseCommit, r.Removed, r.SourceDirty)
		if err != nil {
			return fmt.Errorf("storage: record the repository of session %s: %w", r.SessionID, err)
		}
		return nil
	})
}

// SessionRepos implements core.RepoStore: one query for all of ids.
func (db *DB) SessionRepos(ctx context.Context, ids ...string) (map[string]core.SessionRepo, error) {
	out := make(map[string]core.SessionRepo, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	q, err := db.rq()
	if err != nil {
		return nil, err
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.QueryContext(ctx, `SELECT session_id, repo, worktree, branch, base_commit, removed, source_dirty FROM session_repos
		WHERE session_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: session repositories: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r core.SessionRepo
		if err := rows.Scan(&r.SessionID, &r.Repo, &r.Worktree, &r.Branch, &r.BaseCommit, &r.Removed, &r.SourceDirty); err != nil {
			return nil, fmt.Errorf("storage: session repositories: %w", err)
		}
		out[r.SessionID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: session repositories: %w", err)
	}
	return out, nil
}

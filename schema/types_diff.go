package schema

import "encoding/json"

// SessionDiffParams asks what a session changed in its repository.
type SessionDiffParams struct {
	// SessionID is the session.
	SessionID string `json:"sessionId"`
	// Since is "start" (default: the commit the session started from) or
	// the id of one of the session's checkpoint entries (the last commit
	// made before that checkpoint).
	Since string `json:"since,omitempty"`
}

// SessionDiffResult is a session's changes as a unified diff, with
// per-file stats.
type SessionDiffResult struct {
	// BaseCommit is the commit compared against.
	BaseCommit string `json:"baseCommit"`
	// Dir is the folder compared: the session's worktree, or the shared
	// cwd.
	Dir string `json:"dir"`
	// Branch is the session's worktree branch, when it has one.
	Branch string `json:"branch,omitempty"`
	// Shared is true when the session works in a folder others may write
	// too: the diff then shows every change there since the base commit,
	// not only this session's.
	Shared bool `json:"shared"`
	// Note says what the diff cannot tell (shared folder, deleted
	// worktree, checkpoint base).
	Note string `json:"note,omitempty"`
	// Files are the changed files, by path.
	Files []DiffFile `json:"files"`
	// Diff is the unified diff (git's format; new untracked files
	// included).
	Diff string `json:"diff"`
	// Truncated is true when Diff was cut at 8 MiB (Files is complete).
	Truncated bool `json:"truncated,omitempty"`
}

// DiffFile is one changed file's stats.
type DiffFile struct {
	// Path is the file's path in the repository.
	Path string `json:"path"`
	// Added and Removed count lines (0 for a binary file).
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Binary is true for a binary file.
	Binary bool `json:"binary,omitempty"`
	// Untracked is true for a new file not yet added to git.
	Untracked bool `json:"untracked,omitempty"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r SessionDiffResult) MarshalJSON() ([]byte, error) {
	type plain SessionDiffResult
	return json.Marshal(filled(plain(r)))
}

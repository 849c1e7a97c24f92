package core

import "context"

// ChangeFeed tells a process what other processes sharing its record
// append, as they commit, so that its clients see a session another
// machine (or another process on the same data directory) runs, updating.
// Both stores implement it: PostgreSQL with LISTEN/NOTIFY, SQLite by
// looking for new rows a few times a second.
type ChangeFeed interface {
	// FollowAppends calls fn with each batch of entries another process
	// committed (one session's, in sequence order), on one goroutine, until
	// ctx ends; it returns ctx's error then. What this process appends is
	// not handed back: the process announced it itself.
	FollowAppends(ctx context.Context, fn func(entries []Entry)) error
}

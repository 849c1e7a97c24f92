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

// SessionFeed tells a process which sessions other processes sharing its
// record changed without an append (FollowAppends carries those): a new
// title, the archive flag, the head moved to another branch. Both stores
// implement it, as they do ChangeFeed.
type SessionFeed interface {
	// FollowSessions calls fn with the id of each session another process
	// changed so, after it committed, on one goroutine, until ctx ends; it
	// returns ctx's error then. A session changed several times at once
	// may be handed over once; what this process changes is not handed
	// back.
	FollowSessions(ctx context.Context, fn func(sessionID string)) error
}

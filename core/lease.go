package core

import (
	"context"
	"fmt"
	"time"
)

// SessionLeases is how processes sharing one record agree on which of them
// drives a live session: the process running a session's harness holds its
// lease and renews it; another process refuses to drive the session until
// the lease lapses (ARCHITECTURE.md, Several processes). A Store may
// implement it; without it a process assumes it is alone.
type SessionLeases interface {
	// AcquireLease takes, or renews, the lease of sessionID for owner until
	// ttl from now (by the store's clock). While another owner's lease has
	// not expired it fails with LiveElsewhere.
	AcquireLease(ctx context.Context, sessionID, owner string, ttl time.Duration) error
	// ReleaseLease ends owner's lease of sessionID; a lease held by another
	// owner, or none, is left as it is.
	ReleaseLease(ctx context.Context, sessionID, owner string) error
}

// LiveElsewhereError is the cause of a CodeLiveElsewhere error: who holds
// the session's lease and until when (find it with errors.As).
type LiveElsewhereError struct {
	SessionID string
	Owner     string
	Expires   time.Time
}

func (e *LiveElsewhereError) Error() string {
	return fmt.Sprintf("lease held by %s until %s", e.Owner, e.Expires.UTC().Format(time.RFC3339))
}

// LiveElsewhere is the error of a session whose lease another process
// holds: CodeLiveElsewhere, its cause a *LiveElsewhereError (said on the
// wire as data.detail).
func LiveElsewhere(sessionID, owner string, expires time.Time) *Error {
	exp := expires.UTC().Format(time.RFC3339)
	return &Error{Code: CodeLiveElsewhere,
		Message: fmt.Sprintf("session %s is live elsewhere: another Bridge process runs its harness; it can be resumed here once that process stops (its lease ends %s unless renewed)", sessionID, exp),
		Err:     &LiveElsewhereError{SessionID: sessionID, Owner: owner, Expires: expires}}
}

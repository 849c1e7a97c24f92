package core

import (
	"errors"
	"fmt"
	"syscall"
	"unicode/utf8"
)

// Code is a domain failure class from a closed set. The rpc layer maps each
// code once to a JSON-RPC error with data.code set to the code's string.
type Code string

// The closed set of domain error codes.
const (
	CodeInvalid     Code = "invalid"     // bad input the caller can fix (-32602)
	CodeNotFound    Code = "not_found"   // no such session, entry, preview…
	CodeUnavailable Code = "unavailable" // a harness or capability is missing
	CodeBusy        Code = "busy"        // a compaction or checkpoint is pending
	CodeConflict    Code = "conflict"    // the record changed under the caller
	CodeUnsupported Code = "unsupported" // the harness has no such operation
	CodeHarness     Code = "harness"     // the harness failed or lied
	CodeTimeout     Code = "timeout"     // a reply never arrived in time
	CodeCancelled   Code = "cancelled"   // the caller cancelled
	CodeCorrupt     Code = "corrupt"     // the record is unsound
	CodeInternal    Code = "internal"    // anything else; details only logged
	CodeChanged     Code = "changed"     // compaction: session changed while summarising
	CodeSummary     Code = "summary"     // compaction: no valid summary
	CodeCommit      Code = "commit"      // compaction: commit failed
	CodePersistence Code = "persistence" // compaction: store failed
	// CodeLiveElsewhere: another process sharing the record drives the
	// session (it holds the session's lease, SessionLeases).
	CodeLiveElsewhere Code = "live_elsewhere"
)

// Codes is the closed set, in a stable order, for schemas and docs.
var Codes = []Code{CodeInvalid, CodeNotFound, CodeUnavailable, CodeBusy, CodeConflict,
	CodeUnsupported, CodeHarness, CodeTimeout, CodeCancelled, CodeCorrupt, CodeInternal,
	CodeChanged, CodeSummary, CodeCommit, CodePersistence, CodeLiveElsewhere}

// Error is a domain failure with a code, a message fit for a user, the
// typed facts a client may act on, and the underlying cause. Facts of one
// failure that only Go callers need (a refused checkpoint's rule, a bad
// frame's offset) are typed errors in the chain, read with errors.As.
type Error struct {
	Code    Code
	Message string
	// Field names the params member at fault for CodeInvalid, as a dotted
	// path ("content[1].type"); "" when no one member is. It travels as
	// the wire error's data.field.
	Field string
	// Missing names the capabilities whose absence refused the operation
	// (CodeUnavailable, CodeUnsupported), in doctor's spelling. It travels
	// as data.missing.
	Missing []string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// E builds an *Error.
func E(code Code, msg string, cause error) *Error {
	return &Error{Code: code, Message: msg, Err: cause}
}

// Errorf builds an *Error with a formatted message and no cause.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidField builds a CodeInvalid error naming the params member at
// fault (Field), with a formatted message.
func InvalidField(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Message: fmt.Sprintf(format, args...), Field: field}
}

// ErrorCode returns the code of the first *Error in err's chain, CodeCancelled
// for context cancellation, and CodeInternal otherwise.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, ErrCancelled) {
		return CodeCancelled
	}
	return CodeInternal
}

// Sentinel errors; compare with errors.Is.
var (
	// ErrNotFound is wrapped by Store methods when a session or entry is absent.
	ErrNotFound = errors.New("core: not found")
	// ErrCancelled marks work stopped by its caller.
	ErrCancelled = errors.New("core: cancelled")
	// ErrUnsupported is returned by a host for an operation it does not offer.
	ErrUnsupported = errors.New("core: unsupported by this harness")
	// ErrImagesRefused is wrapped by Live.Prompt when the harness refused
	// the prompt at admission because its model reads no images: nothing
	// of the prompt reached the model, so the text alone may be sent.
	ErrImagesRefused = errors.New("core: the model reads no images")
	// ErrDiskFull marks a write that failed because the disk had no space
	// left (ENOSPC, or SQLite's "database or disk is full").
	ErrDiskFull = errors.New("no space left on the disk")
)

// DiskFull is the error of a write that failed for want of disk space
// under dir: CodeUnavailable, saying so in words a user can act on (never
// a harness's name or a bare "disk I/O error").
func DiskFull(dir string, cause error) *Error {
	return &Error{Code: CodeUnavailable, Message: fmt.Sprintf("disk full: no space left on the disk holding %s; free some space and try again", dir),
		Err: fmt.Errorf("%w: %w", ErrDiskFull, cause)}
}

// IsDiskFull reports whether err is, or was caused by, a full disk.
func IsDiskFull(err error) bool {
	return errors.Is(err, ErrDiskFull) || errors.Is(err, syscall.ENOSPC)
}

// NotFound builds a not_found error naming what was missing.
func NotFound(what, id string) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf("%s %s not found", what, Quote(id)), Err: ErrNotFound}
}

// QuoteMax is how many bytes of an input Quote keeps.
const QuoteMax = 80

// Quote quotes s (as %q does) for an error message, keeping at most its
// first QuoteMax bytes and saying how long the whole was: an error never
// echoes a large input back.
func Quote(s string) string {
	if len(s) <= QuoteMax {
		return fmt.Sprintf("%q", s)
	}
	cut := QuoteMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

// HarnessFailed is the error of a harness's failure, as a request reports
// it: an *Error the adapter made is kept as it is, a full disk says so
// (DiskFull), anything else is CodeHarness naming the harness.
func HarnessFailed(harness string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if IsDiskFull(err) {
		return DiskFull("the data directory", err)
	}
	return E(CodeHarness, harness, err)
}

package checkpoint

import "github.com/bridge-dev/bridge/core"

// SuppressedError is a checkpoint a suppression rule refused. Rule names
// the rule (one of the Suppressed names); Err is the domain error the
// caller sees, which it wraps. Callers find it with errors.As.
type SuppressedError struct {
	Rule Suppression
	Err  *core.Error
}

func (e *SuppressedError) Error() string { return e.Err.Error() }

// Unwrap returns the domain error.
func (e *SuppressedError) Unwrap() error { return e.Err }

// Refusal is the error of a checkpoint d did not fire: code, with d's
// detail as the message, naming d's rule.
func (d Decision) Refusal(code core.Code) *SuppressedError {
	return &SuppressedError{Rule: d.Suppressed, Err: &core.Error{Code: code, Message: "checkpoint not written: " + d.Detail}}
}

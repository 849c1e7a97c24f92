package schema

// ErrorCode is a domain failure class from a closed set; it travels as
// data.code of a JSON-RPC error. The list mirrors core.Codes (a test keeps
// the two equal).
type ErrorCode string

// The closed set of domain error codes.
const (
	ErrInvalid     ErrorCode = "invalid"     // bad input the caller can fix (-32602)
	ErrNotFound    ErrorCode = "not_found"   // no such session, entry, preview…
	ErrUnavailable ErrorCode = "unavailable" // a harness or capability is missing
	ErrBusy        ErrorCode = "busy"        // a compaction or checkpoint is pending
	ErrConflict    ErrorCode = "conflict"    // the record changed under the caller
	ErrUnsupported ErrorCode = "unsupported" // the harness has no such operation
	ErrHarness     ErrorCode = "harness"     // the harness failed or lied
	ErrTimeout     ErrorCode = "timeout"     // a reply never arrived in time
	ErrCancelled   ErrorCode = "cancelled"   // the caller cancelled
	ErrCorrupt     ErrorCode = "corrupt"     // the record is unsound
	ErrInternal    ErrorCode = "internal"    // anything else; details only logged
	ErrChanged     ErrorCode = "changed"     // compaction: session changed while summarising
	ErrSummary     ErrorCode = "summary"     // compaction: no valid summary
	ErrCommit      ErrorCode = "commit"      // compaction: commit failed
	ErrPersistence ErrorCode = "persistence" // compaction: store failed
	// ErrLiveElsewhere: another Bridge process sharing the record drives
	// the session (it holds the session's lease); data.detail names it.
	ErrLiveElsewhere ErrorCode = "live_elsewhere"
)

// ErrorCodes is the closed set, in core.Codes order.
var ErrorCodes = []ErrorCode{ErrInvalid, ErrNotFound, ErrUnavailable, ErrBusy, ErrConflict,
	ErrUnsupported, ErrHarness, ErrTimeout, ErrCancelled, ErrCorrupt, ErrInternal,
	ErrChanged, ErrSummary, ErrCommit, ErrPersistence, ErrLiveElsewhere}

// ErrorData is the data member of a JSON-RPC error for a domain failure.
type ErrorData struct {
	// Code is the failure class.
	Code ErrorCode `json:"code"`
	// Detail says more, for a person (never secrets or stack traces).
	Detail string `json:"detail,omitempty"`
	// Field names the params member at fault for code invalid, as a dotted
	// path ("content[1].type"); absent when no one member is.
	Field string `json:"field,omitempty"`
	// Missing names the capabilities whose absence refused the operation
	// (code unavailable or unsupported), in doctor's spelling.
	Missing []string `json:"missing,omitempty"`
}

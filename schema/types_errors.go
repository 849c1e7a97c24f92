package schema

import "github.com/bridge-dev/bridge/core"

// ErrorCode is a domain failure class from a closed set; it travels as
// data.code of a JSON-RPC error.
type ErrorCode = core.Code // one list: core.Codes, core.CodeInvalid…

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

package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"go.lsp.dev/jsonrpc2"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// JSON-RPC error codes Bridge sends.
const (
	CodeParseError     = jsonrpc2.ParseError           // -32700 malformed JSON
	CodeInvalidRequest = jsonrpc2.InvalidRequest       // -32600 not a request, or wrong lifecycle state
	CodeMethodNotFound = jsonrpc2.MethodNotFound       // -32601 unknown method
	CodeInvalidParams  = jsonrpc2.InvalidParams        // -32602 params do not fit, or a core "invalid" error
	CodeInternal       = jsonrpc2.InternalError        // -32603 an internal failure (details only logged)
	CodeNotInitialized = jsonrpc2.ServerNotInitialized // -32002 request before initialize
	CodeDomain         = jsonrpc2.Code(-32001)         // a domain failure; data.code says which
	CodeCancelled      = jsonrpc2.Code(-32800)         // the request was cancelled
)

// wireCodes maps each domain code to its JSON-RPC code. Codes not listed are
// CodeDomain. This is the one place the mapping lives.
var wireCodes = map[core.Code]jsonrpc2.Code{
	core.CodeInvalid:   CodeInvalidParams,
	core.CodeCancelled: CodeCancelled,
	core.CodeInternal:  CodeInternal,
}

// errorData is the data member of a Bridge error: the contract's type.
type errorData = schema.ErrorData

// wireError builds a JSON-RPC error with Bridge's data member.
func wireError(code jsonrpc2.Code, msg string, data errorData) *jsonrpc2.Error {
	raw, err := json.Marshal(data)
	if err != nil {
		raw = nil
	}
	return &jsonrpc2.Error{Code: code, Message: msg, Data: raw}
}

// invalidParams is a -32602 error naming the offending field.
func invalidParams(field, format string, args ...any) *jsonrpc2.Error {
	return wireError(CodeInvalidParams, fmt.Sprintf(format, args...), errorData{Code: core.CodeInvalid, Field: field})
}

// cancelledError is the -32800 reply to a cancelled request.
func cancelledError(method string) *jsonrpc2.Error {
	return wireError(CodeCancelled, method+": request cancelled", errorData{Code: core.CodeCancelled})
}

// toWire maps an error from a handler or the backend to the error the client
// sees. Wire errors pass through; domain errors keep their message and code;
// anything else is an internal error whose details go only to the log.
func toWire(log *slog.Logger, method string, err error) *jsonrpc2.Error {
	var we *jsonrpc2.Error
	if errors.As(err, &we) {
		return we
	}
	if errors.Is(err, context.Canceled) {
		return cancelledError(method)
	}
	code := core.ErrorCode(err)
	var ce *core.Error
	if code == core.CodeInternal && core.IsDiskFull(err) {
		// A file Bridge writes (a preview, a copy of a harness's
		// database) on a full disk: the cause, not "internal error".
		ce, code = core.DiskFull("the data directory", err), core.CodeUnavailable
		err = ce
	}
	if !errors.As(err, &ce) || code == core.CodeInternal {
		if code == core.CodeCancelled {
			return cancelledError(method)
		}
		log.Error("rpc: internal error", "method", method, "error", err)
		return wireError(CodeInternal, method+": internal error (see the Bridge log)", errorData{Code: core.CodeInternal})
	}
	wc, ok := wireCodes[code]
	if !ok {
		wc = CodeDomain
	}
	data := errorData{Code: code, Field: ce.Field, Missing: ce.Missing}
	if ce.Err != nil && detailCodes[code] && !isSentinel(ce.Err) {
		data.Detail = truncate([]byte(ce.Err.Error()), 400)
	}
	if ce.Err != nil {
		log.Debug("rpc: domain error", "method", method, "code", string(code), "error", err)
	}
	return wireError(wc, ce.Message, data)
}

// detailCodes are the failures whose cause is said in data.detail: input
// the caller can look at. A harness's or the store's own words (which may
// name paths or environment of the machine) stay in the log.
var detailCodes = map[core.Code]bool{core.CodeInvalid: true, core.CodeNotFound: true, core.CodeConflict: true,
	core.CodeLiveElsewhere: true,
	core.CodeTimeout:       true}

// isSentinel reports whether err is one of core's bare sentinel errors,
// which say nothing the code does not.
func isSentinel(err error) bool {
	for _, s := range []error{core.ErrNotFound, core.ErrCancelled, core.ErrUnsupported} {
		if err == s {
			return true
		}
	}
	return false
}

// WireError is the JSON-RPC error object another transport of the same
// service sends (rpc/acp): the mapping toWire makes, in plain types, so the
// mapping stays in this one place.
type WireError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// ErrorFor maps err as this server maps a handler's error for method.
func ErrorFor(log *slog.Logger, method string, err error) WireError {
	we := toWire(log, method, err)
	return WireError{Code: int64(we.Code), Message: we.Message, Data: json.RawMessage(we.Data)}
}

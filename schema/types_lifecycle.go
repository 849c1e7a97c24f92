package schema

import (
	"encoding/json"
)

// ServerName is the name Bridge reports in serverInfo.
const ServerName = "bridge"

// InitializeParams opens the session (LSP initialize).
type InitializeParams struct {
	// ProcessID is the client's process id; null or absent when it has
	// none.
	ProcessID *int `json:"processId,omitempty" jsonschema:"nullable"`
	// ClientInfo names the client.
	ClientInfo *ClientInfo `json:"clientInfo,omitempty"`
	// Locale is the client's user interface language (BCP 47), a hint for
	// messages and handoff headings.
	Locale string `json:"locale,omitempty"`
	// Capabilities says what the client can do.
	Capabilities ClientCapabilities `json:"capabilities"`
	// InitializationOptions configures Bridge for this client; it overrides
	// the configuration file in the data directory. Null means none.
	InitializationOptions *InitializationOptions `json:"initializationOptions,omitempty" jsonschema:"nullable"`
}

// ClientInfo names the client program.
type ClientInfo struct {
	// Name is the client's name.
	Name string `json:"name"`
	// Version is the client's version.
	Version string `json:"version,omitempty"`
}

// ClientCapabilities says what the client can do: LSP 3.17's
// ClientCapabilities, which editors send as they are, plus Bridge's own
// session member. The LSP members Bridge does not act on (workspace,
// textDocument, notebookDocument, general) are accepted in whatever shape
// the client sends, experimental is any value, members this contract does
// not know are ignored; window is checked in its LSP shape and session in
// Bridge's.
type ClientCapabilities struct {
	// Workspace holds the client's workspace/* features (LSP); Bridge does
	// not use them.
	Workspace LSPObject `json:"workspace,omitempty"`
	// TextDocument holds the client's textDocument/* features (LSP);
	// Bridge does not use them.
	TextDocument LSPObject `json:"textDocument,omitempty"`
	// NotebookDocument holds the client's notebook features (LSP); Bridge
	// does not use them.
	NotebookDocument LSPObject `json:"notebookDocument,omitempty"`
	// Window holds the window/* features the client supports.
	Window *WindowClientCapabilities `json:"window,omitempty"`
	// General holds the client's general features (LSP: position
	// encodings, markdown, regular expressions, stale requests); Bridge
	// does not use them.
	General LSPObject `json:"general,omitempty"`
	// Experimental holds the client's experimental capabilities: any JSON
	// value, null included (LSPAny).
	Experimental json.RawMessage `json:"experimental,omitempty"`
	// Session holds the session features the client supports (Bridge's
	// own member).
	Session *SessionClientCapabilities `json:"session,omitempty"`
}

// LSPObject is a JSON object whose members Bridge takes as they come.
type LSPObject map[string]json.RawMessage

// WindowClientCapabilities are the window/* features of a client (LSP
// 3.17).
type WindowClientCapabilities struct {
	// WorkDoneProgress is true when the client accepts
	// window/workDoneProgress/create and server-initiated $/progress.
	WorkDoneProgress bool `json:"workDoneProgress,omitempty"`
	// ShowMessage says how the client handles window/showMessageRequest.
	ShowMessage *ShowMessageRequestClientCapabilities `json:"showMessage,omitempty"`
	// ShowDocument says whether the client handles window/showDocument.
	ShowDocument *ShowDocumentClientCapabilities `json:"showDocument,omitempty"`
}

// ShowMessageRequestClientCapabilities are the client's
// window/showMessageRequest features (LSP).
type ShowMessageRequestClientCapabilities struct {
	// MessageActionItem describes the action items the client supports.
	MessageActionItem *MessageActionItemCapabilities `json:"messageActionItem,omitempty"`
}

// MessageActionItemCapabilities describe the message action items a client
// supports (LSP).
type MessageActionItemCapabilities struct {
	// AdditionalPropertiesSupport is true when the client sends back the
	// action item's members beyond its title.
	AdditionalPropertiesSupport bool `json:"additionalPropertiesSupport,omitempty"`
}

// ShowDocumentClientCapabilities are the client's window/showDocument
// features (LSP).
type ShowDocumentClientCapabilities struct {
	// Support is true when the client handles window/showDocument.
	Support bool `json:"support,omitempty"`
}

// InitializationOptions configure Bridge for one client.
type InitializationOptions struct {
	// DataDir is where Bridge keeps its database and configuration.
	DataDir string `json:"dataDir,omitempty"`
	// Harnesses holds per-harness configuration (command, arguments,
	// presets, timeouts) keyed by harness name, in the configuration file's
	// shape.
	Harnesses map[string]json.RawMessage `json:"harnesses,omitempty"`
	// HostsSessions is true when the client itself hosts sessions: it
	// implements BridgeHost and answers host/* requests.
	HostsSessions bool `json:"hostsSessions,omitempty"`
	// HostHarness is the harness name a hosting client reports as its own.
	HostHarness string `json:"hostHarness,omitempty"`
	// HostCapabilities lists the capabilities a hosting client answers,
	// spelled as doctor spells them ("session.list", "goal.pause"…); Bridge
	// sends host/<capability> only for those.
	HostCapabilities []string `json:"hostCapabilities,omitempty"`
}

// InitializeResult tells the client who Bridge is and what it serves.
type InitializeResult struct {
	// ServerInfo names Bridge and its version.
	ServerInfo ServerInfo `json:"serverInfo"`
	// Capabilities lists what Bridge serves.
	Capabilities ServerCapabilities `json:"capabilities"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (r InitializeResult) MarshalJSON() ([]byte, error) {
	type plain InitializeResult
	return json.Marshal(filled(plain(r)))
}

// ServerInfo names the server.
type ServerInfo struct {
	// Name is always "bridge".
	Name string `json:"name" jsonschema_extras:"const=bridge"`
	// Version is Bridge's version.
	Version string `json:"version"`
}

// ServerCapabilities lists what Bridge serves.
type ServerCapabilities struct {
	// Methods lists the requests Bridge answers (initialize and shutdown
	// included).
	Methods []string `json:"methods"`
	// Notifications lists the notifications Bridge may send.
	Notifications []string `json:"notifications"`
	// Harnesses lists the harness adapters this Bridge was built with.
	Harnesses []string `json:"harnesses,omitempty"`
	// HostMethods lists the host/* requests Bridge will send to this client
	// (empty unless the client hosts sessions).
	HostMethods []string `json:"hostMethods,omitempty"`
	// Experimental repeats methods, notifications, harnesses and
	// hostMethods under the same names, for LSP client libraries that keep
	// only the standard server capabilities (experimental among them), and
	// may hold capabilities not yet in the contract.
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
}

// MarshalJSON writes empty lists as [] rather than null.
func (c ServerCapabilities) MarshalJSON() ([]byte, error) {
	type plain ServerCapabilities
	return json.Marshal(filled(plain(c)))
}

// InitializedParams acknowledges initialize (LSP initialized).
type InitializedParams struct{}

// CancelParams asks the peer to cancel a request ($/cancelRequest).
type CancelParams struct {
	// ID is the id of the request to cancel.
	ID RequestID `json:"id"`
}

// ProgressParams reports progress of long work ($/progress).
type ProgressParams struct {
	// Token is the token from window/workDoneProgress/create or the
	// request's workDoneToken.
	Token ProgressToken `json:"token"`
	// Value is the progress report.
	Value WorkDoneProgress `json:"value"`
}

// WorkDoneProgressParams lets a client ask for progress of a request by
// passing its own token.
type WorkDoneProgressParams struct {
	// WorkDoneToken, when set, is the token Bridge reports $/progress with.
	WorkDoneToken *ProgressToken `json:"workDoneToken,omitempty"`
}

// WorkDoneProgressCreateParams asks the client to create a progress token
// (window/workDoneProgress/create).
type WorkDoneProgressCreateParams struct {
	// Token is the token to create.
	Token ProgressToken `json:"token"`
}

// WorkDoneProgressCancelParams cancels the work a progress token reports
// on (window/workDoneProgress/cancel: the user pressed cancel on a
// cancellable progress); the request is answered with -32800.
type WorkDoneProgressCancelParams struct {
	// Token is the token of the progress to cancel.
	Token ProgressToken `json:"token"`
}

// WorkDoneProgress is one progress value, tagged by kind: begin, report or
// end. In Go it is one flat struct; the schema is the oneOf of
// WorkDoneProgressBegin, WorkDoneProgressReport and WorkDoneProgressEnd.
type WorkDoneProgress struct {
	// Kind is "begin", "report" or "end".
	Kind string `json:"kind"`
	// Title is the operation's title (begin only).
	Title string `json:"title,omitempty"`
	// Cancellable says whether $/cancelRequest can stop the work.
	Cancellable *bool `json:"cancellable,omitempty"`
	// Message is a short progress text.
	Message string `json:"message,omitempty"`
	// Percentage is 0 to 100 when known.
	Percentage *int `json:"percentage,omitempty"`
}

// Progress kinds.
const (
	ProgressBegin  = "begin"
	ProgressReport = "report"
	ProgressEnd    = "end"
)

// WorkDoneProgressBegin starts a progress stream.
type WorkDoneProgressBegin struct {
	// Kind is always "begin".
	Kind string `json:"kind" jsonschema_extras:"const=begin"`
	// Title is the operation's title.
	Title string `json:"title"`
	// Cancellable says whether $/cancelRequest can stop the work.
	Cancellable bool `json:"cancellable,omitempty"`
	// Message is a short progress text.
	Message string `json:"message,omitempty"`
	// Percentage is 0 to 100 when known.
	Percentage *int `json:"percentage,omitempty" jsonschema:"minimum=0,maximum=100"`
}

// WorkDoneProgressReport reports progress within a stream.
type WorkDoneProgressReport struct {
	// Kind is always "report".
	Kind string `json:"kind" jsonschema_extras:"const=report"`
	// Cancellable says whether $/cancelRequest can stop the work.
	Cancellable bool `json:"cancellable,omitempty"`
	// Message is a short progress text.
	Message string `json:"message,omitempty"`
	// Percentage is 0 to 100 when known.
	Percentage *int `json:"percentage,omitempty" jsonschema:"minimum=0,maximum=100"`
}

// WorkDoneProgressEnd ends a progress stream.
type WorkDoneProgressEnd struct {
	// Kind is always "end".
	Kind string `json:"kind" jsonschema_extras:"const=end"`
	// Message is a closing text.
	Message string `json:"message,omitempty"`
}

// ShowMessageParams asks the client to show a message to the user
// (window/showMessage).
type ShowMessageParams struct {
	// Type is the severity.
	Type MessageType `json:"type"`
	// Message is the text.
	Message string `json:"message"`
}

// LogMessageParams asks the client to log a message (window/logMessage).
type LogMessageParams struct {
	// Type is the severity.
	Type MessageType `json:"type"`
	// Message is the text.
	Message string `json:"message"`
}

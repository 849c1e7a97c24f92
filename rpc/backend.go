// Package rpc is Bridge's JSON-RPC 2.0 server over stdio in the Language
// Server Protocol's framing and lifecycle. It is thin: it decodes wire calls,
// enforces the lifecycle, routes cancellation and progress, and calls a
// Backend (the lead's *service.Service), mapping domain errors to JSON-RPC
// errors in one table.
//
// Start with Serve, which cmd/bridge calls with stdin and stdout, and
// ServeMessages, the same server over a message transport (bridge web's
// WebSocket).
package rpc

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// Backend is the domain surface the server calls: the client requests of
// schema.Methods (schema.Backend) and Close. *service.Service implements
// it. Errors should be *core.Error values (or wrap one); any other error is
// reported to the client as an internal error and logged.
type Backend interface {
	schema.Backend
	// Close releases the backend; the server calls it once, on shutdown or
	// when the connection ends.
	Close(ctx context.Context) error
}

// Caller lets the backend call the client back (host/* requests to a client
// that hosts sessions). Call sends a request and waits for its result,
// decoding it into result (which may be nil). When ctx ends first, Call
// sends $/cancelRequest for the request and returns an error wrapping
// core.ErrCancelled. An error reply from the client is returned as a
// *core.Error with code "harness" whose message is the client's.
type Caller interface {
	Call(ctx context.Context, method string, params, result any) error
}

// InitOptions is what the client said in initialize that the backend needs.
type InitOptions struct {
	// DataDir is initializationOptions.dataDir; "" means the default.
	DataDir string
	// Harnesses is initializationOptions.harnesses: per-harness
	// configuration, keyed by harness name, that overrides the
	// configuration file.
	Harnesses map[string]json.RawMessage
	// HostsSessions is true when the client hosts sessions itself and
	// answers host/* requests (sent through the Caller given to Open).
	HostsSessions bool
	// HostHarness is the harness name a hosting client reports as its own.
	HostHarness string
	// HostCapabilities lists the capabilities a hosting client answers, in
	// doctor's spelling; Bridge sends host/<capability> only for those.
	HostCapabilities []string
	// InitializationOptions is the whole initializationOptions verbatim (nil
	// when absent), for options this version of rpc does not model.
	InitializationOptions json.RawMessage
	// RequestPermission is true when the client declared
	// capabilities.session.requestPermission: it answers
	// session/requestPermission (see PermissionAsker).
	RequestPermission bool
	// Locale is the client's user interface language, "" when not given.
	Locale string
	// ClientName and ClientVersion come from clientInfo.
	ClientName    string
	ClientVersion string
	// ProcessID is the client's process id, 0 when not given.
	ProcessID int
}

// Config configures Serve.
type Config struct {
	// Open creates the backend during initialize. ctx lives as long as the
	// connection; n sends notifications to the client; client calls it back.
	// An error fails initialize (mapped like any domain error) and the
	// client may try again.
	Open func(ctx context.Context, opts InitOptions, n peer.Notifier, client Caller) (Backend, error)
	// Version is reported as serverInfo.version.
	Version string
	// Harnesses lists the harness adapters this Bridge was built with,
	// reported in the initialize result's capabilities.
	Harnesses []string
	// MaxContentLength caps one incoming message body; 0 means 64 MiB.
	// Larger bodies are discarded unread and answered with -32600.
	MaxContentLength int64
	// Logger receives diagnostics; it must write to stderr (or elsewhere),
	// never to the protocol's stdout. nil means a text logger on stderr at
	// warning level.
	Logger *slog.Logger
}

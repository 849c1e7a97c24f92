// Package rpcwire holds only a test: it runs the whole host-over-RPC path the
// way cmd/bridge wires it (rpc.Serve over a real Node vscode-jsonrpc client
// that is both the Bridge client and the host of the sessions, a
// *service.Service on a real SQLite store, and rpchost.Host fed by the
// server's host/event notifications). It lives in its own package so that
// the adapter's own tests do not depend on the rpc package.
package rpcwire

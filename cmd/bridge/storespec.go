package main

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/postgres"
)

// recordStore is an opened record, whichever database holds it.
type recordStore interface {
	core.Store
}

// storeSpec says where the record lives: SQLite under the data directory
// (the default) or a PostgreSQL database named by a connection URL. The URL
// may hold a password: it is never printed; String shows it without.
type storeSpec struct {
	kind string // "sqlite" or "postgres"
	path string // sqlite: the database file
	url  string // postgres: the connection URL as given (secret)
	// from names where the choice was made (--store, BRIDGE_STORE,
	// config.json), for messages.
	from string
}

// String is the store as it may be shown: the SQLite file, or the URL
// without its password (postgres://user@host:5432/db?sslmode=require).
func (s storeSpec) String() string {
	if s.kind == "postgres" {
		return redactURL(s.url)
	}
	return s.path
}

// storeFlagHelp is the help of --store.
const storeFlagHelp = "where the record lives: postgres://USER@HOST/DB (a PostgreSQL database) or sqlite (the data directory's database, the default)"

// resolveStore picks the store: the --store flag, then BRIDGE_STORE, then
// config.json's "store", else SQLite in the data directory dir.
func resolveStore(flagValue string, cfg Config, dir string) (storeSpec, error) {
	v, from := flagValue, "--store"
	if v == "" {
		v, from = os.Getenv("BRIDGE_STORE"), "BRIDGE_STORE"
	}
	if v == "" {
		v, from = cfg.Store, "config.json store"
	}
	return parseStore(v, from, filepath.Join(dir, DatabaseFile))
}

// parseStore reads a store value; defaultPath is the SQLite file "" and
// "sqlite" stand for. A value it cannot read is refused without echoing it
// (it may hold a password).
func parseStore(v, from, defaultPath string) (storeSpec, error) {
	switch {
	case v == "" || v == "sqlite":
		return storeSpec{kind: "sqlite", path: defaultPath, from: from}, nil
	case strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://"):
		u, err := url.Parse(v)
		if err != nil || u.Host == "" && u.Query().Get("host") == "" {
			return storeSpec{}, core.Errorf(core.CodeInvalid, "%s: %s is not a PostgreSQL URL this Bridge can read (want postgres://USER@HOST[:PORT]/DATABASE[?sslmode=...])", from, redactURL(v))
		}
		return storeSpec{kind: "postgres", url: v, from: from}, nil
	}
	return storeSpec{}, core.Errorf(core.CodeInvalid, "%s: %s is not a store (want postgres://USER@HOST/DATABASE or sqlite)", from, redactURL(v))
}

// redactURL shows a connection URL without secrets: the password of the
// user part and any query parameter whose name says password are dropped.
// A value that does not parse as a URL is not shown at all.
func redactURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		if !strings.ContainsAny(v, "@:=") {
			return core.Quote(v)
		}
		return "(a value that is not a URL; not shown, as it may hold a password)"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if strings.Contains(strings.ToLower(k), "password") {
				q.Del(k)
			}
		}
		u.RawQuery = q.Encode()
	}
	u.Fragment = ""
	return u.String()
}

// secretsOf lists the parts of a connection URL that must never be
// printed: the password and password-like query values.
func secretsOf(v string) []string {
	u, err := url.Parse(v)
	if err != nil {
		return []string{v}
	}
	var out []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	for k, vs := range u.Query() {
		if strings.Contains(strings.ToLower(k), "password") {
			for _, s := range vs {
				if s != "" {
					out = append(out, s, url.QueryEscape(s))
				}
			}
		}
	}
	return out
}

// redactedError is an error whose message had a connection URL and its
// secrets taken out; the cause stays reachable for errors.Is/As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactError returns err with every occurrence of the URL (shown without
// its password instead) and of its secrets removed from its message.
func redactError(err error, rawURL string) error {
	if err == nil {
		return nil
	}
	msg := strings.ReplaceAll(err.Error(), rawURL, redactURL(rawURL))
	for _, s := range secretsOf(rawURL) {
		msg = strings.ReplaceAll(msg, s, "********")
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// openPostgresStore opens a PostgreSQL record, its connections marked with
// this process's origin (so that the appends other processes commit reach
// this one's clients, and its own are not announced twice).
var openPostgresStore = func(ctx context.Context, rawURL string, maxEntryBytes int) (recordStore, error) {
	withOrigin, err := postgres.WithOrigin(rawURL, processOwner())
	if err != nil {
		return nil, err
	}
	return postgres.Open(ctx, withOrigin, postgres.Options{MaxEntryBytes: maxEntryBytes})
}

// processOwner names this process among those sharing a record: in its
// sessions' leases and as the origin of its appends (service.ProcessOwner).
var processOwner = service.ProcessOwner

// openSpec opens the record spec names.
func openSpec(ctx context.Context, spec storeSpec, maxEntryBytes int) (recordStore, error) {
	switch spec.kind {
	case "postgres":
		st, err := openPostgresStore(ctx, spec.url, maxEntryBytes)
		if err != nil {
			// The outer error is the one the wire and the terminal show:
			// its message and its cause are both free of the password.
			code := core.CodePersistence
			var ce *core.Error
			if errors.As(err, &ce) && ce.Code != core.CodeInternal {
				code = ce.Code
			}
			return nil, core.E(code, "open the PostgreSQL record "+spec.String(), redactError(err, spec.url))
		}
		return st, nil
	}
	// The search index opens on the indexer's goroutine (SearchLater):
	// serve answers initialize without waiting for its setup transaction,
	// and a search waits for it, or reports why it could not be opened.
	db, err := storage.Open(ctx, spec.path, storage.Options{MaxEntryBytes: maxEntryBytes, SearchLater: true})
	if err != nil {
		return nil, core.E(core.CodePersistence, "open the database", err)
	}
	return db, nil
}

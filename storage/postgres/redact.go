package postgres

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Redact returns a connection string fit for messages and logs: a URL
// without its password (user info and the password parameter), a
// key=value string with password=xxxxx. A string that does not parse as a
// URL is not shown at all.
func Redact(conn string) string {
	if isURL(conn) {
		u, err := url.Parse(conn)
		if err != nil {
			return "(a postgres:// URL that does not parse)"
		}
		if u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return kvPassword.ReplaceAllString(conn, "password=xxxxx")
}

var kvPassword = regexp.MustCompile(`password\s*=\s*('(?:[^'\\]|\\.)*'|\S*)`)

func isURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// passwordOf finds the password in a connection string that may not
// parse, best effort, so that it can be scrubbed from messages.
func passwordOf(conn string) string {
	if isURL(conn) {
		if u, err := url.Parse(conn); err == nil {
			if p, ok := u.User.Password(); ok {
				return p
			}
			return u.Query().Get("password")
		}
		// user:password@ of a URL that does not parse.
		rest := conn[strings.Index(conn, "://")+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				return pw
			}
		}
		return ""
	}
	if m := kvPassword.FindStringSubmatch(conn); m != nil {
		return strings.Trim(m[1], "'")
	}
	return ""
}

// parseReason is what a pgx parse error says is wrong, without the
// connection string it quotes or the cause (which may quote it again).
func parseReason(err error, conn string) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return "it is not a connection string"
	}
	s := pe.Error()
	if i := strings.LastIndex(s, "`: "); i >= 0 {
		s = s[i+3:]
	}
	if cause := errors.Unwrap(pe); cause != nil {
		s = strings.TrimSuffix(s, " ("+cause.Error()+")")
		// The cause says more (a certificate file that cannot be read),
		// unless it quotes the connection string.
		if c := scrub(cause.Error(), passwordOf(conn)); !strings.Contains(c, "://") && !strings.Contains(c, "password") {
			s += ": " + c
		}
	}
	return s
}

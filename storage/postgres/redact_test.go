package postgres_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

// TestAWrongPasswordIsNeverPrinted: a login refused for a wrong password
// is CodeUnavailable, says which database, and its text holds neither the
// wrong password nor the real one.
func TestAWrongPasswordIsNeverPrinted(t *testing.T) {
	server := pgtest.URL(t)
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := u.User.Password()
	const wrong = "Wr0ng-Pa55word-that-must-not-show"
	u.User = url.UserPassword(u.User.Username(), wrong)
	kv := "host=" + u.Query().Get("host") + " dbname=" + strings.TrimPrefix(u.Path, "/") + " user=" + u.User.Username() +
		" password='" + wrong + "'"
	for _, conn := range []string{u.String(), kv} {
		_, err := postgres.Open(ctx, conn, postgres.Options{})
		if err == nil {
			t.Fatalf("Open with a wrong password succeeded")
		}
		if core.ErrorCode(err) != core.CodeUnavailable {
			t.Errorf("code %s, want unavailable: %v", core.ErrorCode(err), err)
		}
		msg := err.Error()
		if strings.Contains(msg, wrong) || (real != "" && strings.Contains(msg, real)) {
			t.Fatalf("the error prints a password: %s", msg)
		}
		if !strings.Contains(msg, "password authentication failed") {
			t.Errorf("the error does not say what failed: %s", msg)
		}
	}
}

// TestConnectionStringsThatDoNotParse: a connection string that does not
// parse is CodeInvalid and never echoes its password; TLS options reach
// pgx's parsing (a root certificate that cannot be read is named).
func TestConnectionStringsThatDoNotParse(t *testing.T) {
	const secret = "s3cret-in-a-bad-url"
	for _, conn := range []string{
		"postgres://bob:" + secret + "@db.example:notaport/x",
		"host=/tmp port=oops password=" + secret,
		"postgres://bob:" + secret + "@db.example/x?sslmode=verify-full&sslrootcert=/nonexistent/root.crt",
		"postgres://bob:" + secret + "@db.example/x?sslmode=sometimes",
	} {
		_, err := postgres.Open(ctx, conn, postgres.Options{})
		if core.ErrorCode(err) != core.CodeInvalid {
			t.Errorf("%s: %v (%s), want invalid", postgres.Redact(conn), err, core.ErrorCode(err))
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error prints the password: %v", err)
		}
	}
	_, err := postgres.Open(ctx, "postgres://bob:"+secret+"@db.example/x?sslmode=verify-full&sslrootcert=/nonexistent/root.crt", postgres.Options{})
	if !strings.Contains(err.Error(), "root.crt") && !strings.Contains(err.Error(), "sslrootcert") && !strings.Contains(err.Error(), "CA") {
		t.Errorf("a root certificate that cannot be read is not named: %v", err)
	}
	if _, err := postgres.Open(ctx, "  ", postgres.Options{}); core.ErrorCode(err) != core.CodeInvalid {
		t.Errorf("empty: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://bob:pw@db.example:5432/bridge?sslmode=require": "postgres://bob:xxxxx@db.example:5432/bridge?sslmode=require",
		"postgresql://bob@db.example/bridge":                       "postgresql://bob@db.example/bridge",
		"postgres://db.example/bridge?password=pw&sslmode=require": "postgres://db.example/bridge?password=xxxxx&sslmode=require",
		"host=db.example user=bob password=pw dbname=bridge":       "host=db.example user=bob password=xxxxx dbname=bridge",
		"host=db.example password='p w' dbname=bridge":             "host=db.example password=xxxxx dbname=bridge",
	} {
		if got := postgres.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

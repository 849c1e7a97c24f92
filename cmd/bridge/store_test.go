package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreRedactURL: a connection URL is shown with its user, host, port,
// database and options, never with its password (in the user part or a
// password-like query parameter); a value that is not a URL is not shown.
func TestStoreRedactURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://bridge:s3cret@db.example:5432/team?sslmode=verify-full", "postgres://bridge@db.example:5432/team?sslmode=verify-full"},
		{"postgresql://bridge@127.0.0.1/team", "postgresql://bridge@127.0.0.1/team"},
		{"postgres://u:p%40ss@h/db?password=other&sslpassword=third&sslrootcert=%2Fca.pem", "postgres://u@h/db?sslrootcert=%2Fca.pem"},
		{"host=h user=u password=s3cret", "(a value that is not a URL; not shown, as it may hold a password)"},
		{"mysql://u:s3cret@h/db", "mysql://u@h/db"},
	} {
		got := redactURL(c.in)
		if got != c.want {
			t.Errorf("redactURL(%q) = %q, want %q", c.in, got, c.want)
		}
		for _, secret := range []string{"s3cret", "p@ss", "p%40ss", "other", "third"} {
			if strings.Contains(got, secret) {
				t.Errorf("redactURL(%q) = %q shows %q", c.in, got, secret)
			}
		}
	}
}

// TestStoreRedactError: an error naming the URL or the password (a driver
// quoting its configuration) reads without the password, and still
// unwraps to its cause.
func TestStoreRedactError(t *testing.T) {
	raw := "postgres://bridge:s3cr%2Ft@127.0.0.1:9/team?sslpassword=k3y"
	cause := errors.New("connect " + raw + ": password s3cr/t for key k3y refused")
	err := redactError(cause, raw)
	for _, secret := range []string{"s3cr/t", "s3cr%2Ft", "k3y"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("redacted error %q shows %q", err, secret)
		}
	}
	if !strings.Contains(err.Error(), "postgres://bridge@127.0.0.1:9/team") {
		t.Errorf("redacted error %q does not name the store", err)
	}
	if !errors.Is(err, cause) {
		t.Errorf("redacted error does not unwrap to its cause")
	}
}

// TestStoreSelection: --store beats BRIDGE_STORE, which beats config.json's
// "store"; a value that is no store is refused naming where it came from
// and without echoing what may be a password.
func TestStoreSelection(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"store": "mongodb://cfg:cfgsecret@h/db"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		from string
	}{
		{"config", nil, nil, "config.json store"},
		{"env", []string{"BRIDGE_STORE=redis://env:envsecret@h/0"}, nil, "BRIDGE_STORE"},
		{"flag", []string{"BRIDGE_STORE=redis://env:envsecret@h/0"}, []string{"--store", "mysql://flag:flagsecret@h/db"}, "--store"},
		{"flag after the command", nil, []string{"--store", "host=h password=flagsecret"}, "--store"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--data-dir", dir, "sessions"}, c.args...)
			out, stderr, code := runCLI(t, c.env, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1: %s%s", code, out, stderr)
			}
			if !strings.Contains(stderr, c.from+": ") || !strings.Contains(stderr, "is not a store") {
				t.Errorf("the refusal does not name %s: %s", c.from, stderr)
			}
			for _, secret := range []string{"cfgsecret", "envsecret", "flagsecret"} {
				if strings.Contains(out+stderr, secret) {
					t.Errorf("the refusal shows the password %q: %s", secret, stderr)
				}
			}
		})
	}
	// "sqlite" is the default, named explicitly: it overrides config.json.
	if out, stderr, code := runCLI(t, nil, "--data-dir", dir, "--store", "sqlite", "sessions", "--json"); code != 0 {
		t.Fatalf("--store sqlite: exit %d: %s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, DatabaseFile)); err != nil {
		t.Errorf("--store sqlite did not open the data directory's database: %v", err)
	}
}

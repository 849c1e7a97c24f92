// Package pgtest gives tests a PostgreSQL database of their own.
//
// The server is the one BRIDGE_TEST_POSTGRES names (a postgres:// URL of a
// role that may create databases; .ci/test starts a temporary cluster and
// exports it). When the variable is unset and CI is "true", a test that
// needs PostgreSQL fails: a missing server must not look like a pass.
// Outside CI the first test that asks starts a temporary cluster of its own
// (initdb and pg_ctl from PATH or /usr/lib/postgresql/*/bin, as the
// unprivileged user nobody when the tests run as root, listening only on a
// Unix socket in a temporary folder), which Main stops and removes when the
// test binary ends. Nothing is written under HOME.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EnvURL names the variable holding the server's URL.
const EnvURL = "BRIDGE_TEST_POSTGRES"

var (
	startOnce sync.Once
	baseURL   string
	startErr  error
	cluster   *Cluster
)

// Main runs the tests and stops the cluster this process started, if any:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// ServerURL returns the URL of the server the tests use (a maintenance
// database on which databases may be created), starting a temporary
// cluster outside CI when BRIDGE_TEST_POSTGRES is unset.
func ServerURL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set: .ci/test starts a PostgreSQL cluster and exports its URL; PostgreSQL tests do not skip in CI", EnvURL)
	}
	startOnce.Do(func() {
		cluster, startErr = Start()
		if startErr == nil {
			baseURL = cluster.URL
		}
	})
	if startErr != nil {
		t.Fatalf("start a temporary PostgreSQL cluster (install postgresql-15, or set %s): %v", EnvURL, startErr)
	}
	return baseURL
}

// URL creates an empty database for this test and returns its URL; the
// database is dropped when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, ServerURL(t), "")
}

// Copy returns the URL of a database of this test's own, a copy of a
// template database that prepare filled (given the template's URL) the
// first time this test binary asked for key: a schema migrated once
// instead of in every test. The copy is dropped when the test ends; the
// templates when Main or Stop runs.
func Copy(t testing.TB, key string, prepare func(ctx context.Context, url string) error) string {
	t.Helper()
	server := ServerURL(t)
	templatesMu.Lock()
	tm := templates[key]
	if tm == nil {
		tm = &template{}
		templates[key] = tm
	}
	templatesMu.Unlock()
	tm.once.Do(func() {
		name := "bridge_template_" + randomHex(8)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if tm.err = createDatabase(ctx, server, name, ""); tm.err != nil {
			return
		}
		tm.server, tm.name = server, name
		u, err := WithDatabase(server, name)
		if err == nil {
			err = prepare(ctx, u)
		}
		if err != nil {
			tm.err = fmt.Errorf("prepare the template %q: %w", key, err)
		}
	})
	if tm.err != nil {
		t.Fatalf("pgtest: %v", tm.err)
	}
	return newDatabase(t, server, tm.name)
}

// template is a database Copy copies.
type template struct {
	once         sync.Once
	server, name string
	err          error
}

var (
	templatesMu sync.Mutex
	templates   = map[string]*template{}
)

// dropTemplates drops the templates Copy made.
func dropTemplates() {
	templatesMu.Lock()
	defer templatesMu.Unlock()
	for key, tm := range templates {
		if tm.name != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			if err := exec1(ctx, tm.server, "DROP DATABASE IF EXISTS "+tm.name+" WITH (FORCE)"); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: drop the template %q: %v\n", key, err)
			}
			cancel()
		}
		delete(templates, key)
	}
}

// newDatabase creates a database for this test (a copy of template, or
// of the server's empty template1 when it is "") and returns its URL; the
// database is dropped when the test ends.
func newDatabase(t testing.TB, server, template string) string {
	t.Helper()
	name := "bridge_test_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := createDatabase(ctx, server, name, template); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := exec1(ctx, server, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	u, err := WithDatabase(server, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// createDatabase creates name as a copy of template ("": template1) by
// copying its files (STRATEGY FILE_COPY, PostgreSQL 15): for a small
// database several times faster than the default, which writes every page
// to the WAL. A server older than 15 does not know the option and gets the
// plain statement.
func createDatabase(ctx context.Context, server, name, template string) error {
	sql := "CREATE DATABASE " + name
	if template != "" {
		sql += " TEMPLATE " + template
	}
	strategy := " STRATEGY FILE_COPY"
	for {
		err := exec1(ctx, server, sql+strategy)
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe) && pe.Code == "42601" && strategy != "": // syntax error: before 15
			strategy = ""
		case errors.As(err, &pe) && pe.Code == "55006" && template != "" && ctx.Err() == nil:
			// The template's last connection (prepare's) is still
			// closing on the server.
			time.Sleep(20 * time.Millisecond)
		default:
			return err
		}
	}
}

// WithDatabase returns server with its database replaced by name.
func WithDatabase(server, name string) (string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", fmt.Errorf("pgtest: %s is not a URL", EnvURL)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func exec1(ctx context.Context, server, sql string) error {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("connect to the test server: %w", err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// Cluster is a temporary PostgreSQL cluster.
type Cluster struct {
	// Dir holds the data folder and the socket.
	Dir string
	// URL connects as the superuser "postgres" with its password, over the
	// Unix socket in Dir, to the database "postgres".
	URL string
	// Password is the superuser's password.
	Password string

	pgCtl    string
	as       []string // setpriv prefix when running as root
	uid, gid int      // the cluster's owner when running as root
}

// Start creates and starts a temporary cluster: password authentication
// (scram-sha-256) for every connection, no TCP listener, the socket in its
// own folder.
func Start() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bridge-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Password: randomHex(12), pgCtl: filepath.Join(bin, "pg_ctl")}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	if os.Geteuid() == 0 {
		// initdb refuses to run as root: the cluster belongs to nobody.
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("running as root, and there is no user nobody to own the cluster: %w", err)
		}
		c.uid, _ = strconv.Atoi(u.Uid)
		c.gid, _ = strconv.Atoi(u.Gid)
		if err := os.Chown(dir, c.uid, c.gid); err != nil {
			return nil, err
		}
		c.as = []string{"setpriv", "--reuid=" + u.Uid, "--regid=" + u.Gid, "--clear-groups", "--"}
	}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(c.Password+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := c.chown(pwfile); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if out, err := c.run(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--pwfile", pwfile,
		"--auth=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	os.Remove(pwfile)
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories='%s' -c fsync=off -c max_connections=200", dir)
	if out, err := c.run(c.pgCtl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return nil, fmt.Errorf("pg_ctl start: %v: %s %s", err, out, log)
	}
	c.URL = (&url.URL{Scheme: "postgres", User: url.UserPassword("postgres", c.Password), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}}.Encode()}).String()
	ok = true
	return c, nil
}

// Stop stops the cluster and removes its folder.
func (c *Cluster) Stop() error {
	out, err := c.run(c.pgCtl, "-D", filepath.Join(c.Dir, "data"), "-m", "immediate", "-w", "stop")
	rerr := os.RemoveAll(c.Dir)
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return rerr
}

func (c *Cluster) chown(path string) error {
	if len(c.as) == 0 {
		return nil
	}
	return os.Chown(path, c.uid, c.gid)
}

func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, c.as...), name), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.Dir
	// The server inherits nothing of the tests' environment but a locale.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=" + c.Dir}
	return cmd.CombinedOutput()
}

// binDir finds initdb and pg_ctl: on PATH, else the newest
// /usr/lib/postgresql/N/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "initdb")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb and pg_ctl found (on PATH or in /usr/lib/postgresql/*/bin)")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

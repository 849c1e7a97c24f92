package pgtest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestURLGivesEachTestItsOwnDatabase: two URLs name two empty databases,
// and a table made in one is not in the other.
func TestURLGivesEachTestItsOwnDatabase(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.URL(t), pgtest.URL(t)
	if a == b {
		t.Fatal("two calls gave one database")
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	if _, err := ca.Exec(ctx, `CREATE TABLE only_in_a (x int)`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := cb.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the second database sees the first's table: %d, %v", n, err)
	}
}

// TestMissingServerFailsInCI: under CI=true with no BRIDGE_TEST_POSTGRES,
// a test that needs PostgreSQL fails, naming the variable, instead of
// starting a cluster of its own or skipping.
func TestMissingServerFailsInCI(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		pgtest.URL(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMissingServerFailsInCI$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PGTEST_CHILD=1", "CI=true", pgtest.EnvURL+"=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the test passed without a server:\n%s", out)
	}
	if !strings.Contains(string(out), pgtest.EnvURL+" is not set") || strings.Contains(string(out), "SKIP") {
		t.Fatalf("the failure does not name %s:\n%s", pgtest.EnvURL, out)
	}
}

// TestCopyStartsFromThePreparedTemplate: Copy prepares its template once
// per key, and each copy starts with what prepare made and is a database
// of its own.
func TestCopyStartsFromThePreparedTemplate(t *testing.T) {
	ctx := context.Background()
	prepared := 0
	prepare := func(ctx context.Context, url string) error {
		prepared++
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, `CREATE TABLE made_by_prepare (x int); INSERT INTO made_by_prepare VALUES (7)`)
		return err
	}
	a, b := pgtest.Copy(t, "copy-test", prepare), pgtest.Copy(t, "copy-test", prepare)
	if a == b || prepared != 1 {
		t.Fatalf("two copies: same database %v, template prepared %d times (want 1)", a == b, prepared)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	if _, err := ca.Exec(ctx, `INSERT INTO made_by_prepare VALUES (8)`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		conn *pgx.Conn
		want int
	}{{ca, 15}, {cb, 7}} {
		var sum int
		if err := c.conn.QueryRow(ctx, `SELECT sum(x) FROM made_by_prepare`).Scan(&sum); err != nil || sum != c.want {
			t.Fatalf("sum %d (%v), want %d: each copy starts from the template and is its own", sum, err, c.want)
		}
	}
}

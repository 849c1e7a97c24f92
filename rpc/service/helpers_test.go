package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/fake"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/rpc/service/servicetest"
	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/storage"
	"github.com/bridge-dev/bridge/storage/postgres"
	"github.com/bridge-dev/bridge/storage/postgres/pgtest"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// rigStore is the record a rig's service runs on, as tests read and write
// it directly: the ports both stores (SQLite and PostgreSQL) implement.
type rigStore interface {
	core.Store
	core.Dumper
	core.SessionLeases
	core.Searcher
	core.UsageLedger
	core.RepoStore
	core.DiscoveryLog
}

// opener opens a fresh, empty record for one test (closed when it ends).
type opener func(testing.TB) rigStore

// openSQLite is a SQLite file under the test's temporary folder.
func openSQLite(tb testing.TB) rigStore { return storagetest.Open(tb) }

// openPostgres is a PostgreSQL database of the test's own, a copy of one
// the store migrated once (pgtest: the server BRIDGE_TEST_POSTGRES names;
// outside CI a temporary cluster when it is unset; under CI=true a missing
// server fails the test).
func openPostgres(tb testing.TB) rigStore {
	tb.Helper()
	u := pgtest.Copy(tb, "migrated", func(ctx context.Context, url string) error {
		db, err := postgres.Open(ctx, url, postgres.Options{})
		if err != nil {
			return err
		}
		return db.Close()
	})
	db, err := postgres.Open(context.Background(), u, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// eachStore runs f twice, as the subtests "sqlite" and "postgres": tests
// whose service reads and writes the record in ways the stores could
// differ on (checkpoints, resume, leases, imports, migration, windows) run
// on both; tests about a harness's protocol run on SQLite only.
func eachStore(t *testing.T, f func(t *testing.T, open opener)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { f(t, openSQLite) })
	t.Run("postgres", func(t *testing.T) { f(t, openPostgres) })
}

// countRows counts the rows of a table of the record, on either store.
func countRows(t testing.TB, db rigStore, table string) int {
	t.Helper()
	var n int
	var err error
	switch db := db.(type) {
	case *storage.DB:
		err = db.SQL().QueryRow(`SELECT count(*) FROM ` + table).Scan(&n)
	case *postgres.DB:
		err = db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n)
	default:
		t.Fatalf("countRows: a %T is neither store", db)
	}
	if err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// rig is a service over a real store (SQLite unless the test opens
// another) and fake hosts.
type rig struct {
	t     testing.TB
	svc   *service.Service
	db    rigStore
	rec   *servicetest.Recorder
	dir   string
	hosts []core.BridgeHost
}

type rigOptions struct {
	fake    fake.Options
	extra   []core.BridgeHost
	presets []core.Preset
	timeout time.Duration
	// db is the record (a second rig on the same record stands for another
	// process); when nil, open makes a fresh one (SQLite when open is nil).
	db   rigStore
	open opener
	dir  string
	// shutdownCheckpoints keeps Close's before_shutdown checkpoints on; the
	// rig turns them off by default, where Close stands for a process going
	// away. suspendAfter and riskyEntries set the controller's options.
	shutdownCheckpoints bool
	shutdownLimit       time.Duration
	suspendAfter        time.Duration
	riskyEntries        int
	// wrap replaces the fake host (a different version, say).
	wrap func(*fake.Host) core.BridgeHost
	// store wraps the database the service is given (tests still read it
	// directly through rig.db).
	store func(rigStore) core.Store
	// permissions and approvalTimeout are service.Options'.
	permissions     service.PermissionAsker
	approvalTimeout time.Duration
	// notifier wraps the recorder the service tells (to hear more).
	notifier func(*servicetest.Recorder) service.Notifier
	// leaseOwner and leaseTTL are service.Options' (lease_test.go).
	leaseOwner string
	leaseTTL   time.Duration
}

func newRig(t testing.TB, o rigOptions) *rig {
	t.Helper()
	db := o.db
	if db == nil && o.open != nil {
		db = o.open(t)
	} else if db == nil {
		db = openSQLite(t)
	}
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	var main core.BridgeHost = fake.New(o.fake)
	if o.wrap != nil {
		main = o.wrap(main.(*fake.Host))
	}
	hosts := append([]core.BridgeHost{main}, o.extra...)
	rec := servicetest.NewRecorder()
	var n service.Notifier = rec
	if o.notifier != nil {
		n = o.notifier(rec)
	}
	var st core.Store = db
	if o.store != nil {
		st = o.store(db)
	}
	svc, err := service.New(service.Options{Store: st, Hosts: hosts, Notifier: n, DataDir: dir,
		Presets: o.presets, CheckpointTimeout: o.timeout, Permissions: o.permissions, ApprovalTimeout: o.approvalTimeout,
		NoShutdownCheckpoint: !o.shutdownCheckpoints, ShutdownCheckpoint: o.shutdownLimit,
		SuspendAfter: o.suspendAfter, RiskyResumeEntries: o.riskyEntries, LeaseOwner: o.leaseOwner, LeaseTTL: o.leaseTTL,
		RepoStatus: func(ctx context.Context, cwd string) (string, error) { return " M src/changed.go\n", nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	return &rig{t: t, svc: svc, db: db, rec: rec, dir: dir, hosts: hosts}
}

func (r *rig) create() core.Session {
	r.t.Helper()
	s, err := r.svc.SessionCreate(context.Background(), schema.SessionCreateParams{Harness: "fake", Cwd: r.t.TempDir(), Title: "t", Model: "fake-large", Effort: "high"})
	if err != nil {
		r.t.Fatal(err)
	}
	sess, err := r.db.GetSession(context.Background(), s.SessionID)
	if err != nil {
		r.t.Fatal(err)
	}
	return sess
}

func (r *rig) prompt(id, text string) {
	r.t.Helper()
	if _, err := r.svc.SessionPrompt(context.Background(), schema.SessionPromptParams{SessionID: id, Content: []schema.Content{{Type: "text", Text: text}}}); err != nil {
		r.t.Fatalf("prompt %q: %v", text, err)
	}
}

func (r *rig) branch(id string) []core.Entry {
	r.t.Helper()
	b, err := r.db.ActiveBranch(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

func kinds(es []core.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, string(e.Kind))
	}
	return out
}

func payload(t *testing.T, e core.Entry) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scriptFor answers prompts containing a key with steps.
func scriptFor(pairs map[string][]fake.Step) func(string) []fake.Step {
	return func(p string) []fake.Step {
		for k, steps := range pairs {
			if strings.Contains(p, k) {
				return steps
			}
		}
		return nil
	}
}

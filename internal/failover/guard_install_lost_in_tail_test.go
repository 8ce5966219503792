package failover

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/netproxy"
)

// TestGuardInstallLostInTailRefused (red-team rt54c F1): an asynchronous failover loses
// the tail, and in the tail was the installation of a second table's guard (registry row,
// triggers, tombstone table, as fencedsql-schema -apply does) with the last token writes
// and a DELETE's tombstone. The documented hook (RaiseTokenFloor to the lock service's
// last token + 1) succeeds on the new primary, which records nothing about the table.
// The application's pool lists the table: since the database has a token floor (the
// surviving guard of failover_rows reads it), the lazy check refuses the table, which
// carries no floor-reading guard (ErrSchema, floorguard.go), so the stale holder's
// token below the floor writes nothing — through the application's running pool and
// through a pool opened afresh.
//
// The running pool has the default WithSchemaRecheck (one minute) and checked the table
// on the old primary (A's and B's writes): its new connections reach another server
// (the promoted replica, another identity: dialect.ServerIdentifier), so it does not
// trust those verdicts there and checks the table again before the stale write
// (docs/design.md G14, "The server behind a running pool"; before, the verdict made on
// the old primary let the stale writes through for up to a minute).
func TestGuardInstallLostInTailRefused(t *testing.T) {
	env := needEnv(t)
	t.Run("PostgreSQL", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pair, err := NewPostgres(ctx, env, Async)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pair.Close() })
		addr := func(dsn string) string { return "127.0.0.1:" + portOf(dsn) }
		lostGuardInstall(ctx, t, pair, pgDB, pair.replica.dsn(), pair.replica.srv, addr,
			func(proxy string) string {
				return "postgres://fenced@" + proxy + "/postgres?sslmode=disable&connect_timeout=5"
			})
	})
	t.Run("MariaDB", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		pair := asyncMariaDBPair(t, ctx, env)
		addr := func(dsn string) string {
			i := strings.Index(dsn, "tcp(")
			j := strings.Index(dsn[i:], ")")
			return dsn[i+4 : i+j]
		}
		lostGuardInstall(ctx, t, pair, myDB, pair.replica.dsn(mariaDBDatabase), pair.replica.srv, addr,
			func(proxy string) string {
				dsn := pair.DSN()
				return strings.Replace(dsn, addr(dsn), proxy, 1)
			})
	})
}

func lostGuardInstall(ctx context.Context, t *testing.T, pair detacher, d DB, replicaDSN string, replicaSrv *server,
	addrOf func(string) string, viaProxy func(proxy string) string) {
	if _, err := Install(ctx, pair.DSN(), d); err != nil {
		t.Fatal(err)
	}
	const t2 = "lost_guard_items"
	plain, err := sql.Open(d.PlainDriver, pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	create := `CREATE TABLE ` + t2 + ` (id BIGINT PRIMARY KEY, holder TEXT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`
	if d.PlainDriver == "mysql" {
		create = strings.Replace(create, "holder TEXT", "holder VARCHAR(8)", 1) + " ENGINE=InnoDB"
	}
	logicalExec(t, ctx, plain, create, `INSERT INTO `+t2+` (id, holder) VALUES (1, 'zero'), (2, 'zero')`)
	waitReplicaRow(ctx, t, d.PlainDriver, replicaDSN, `SELECT count(*) FROM `+t2+` WHERE id = 2`, replicaSrv)
	if err := pair.Detach(ctx); err != nil { // the tail starts here
		t.Fatal(err)
	}
	// The tail: t2's guard installed as documented (registry row, Check's Fix).
	spec := schema.GuardSpec{Table: t2}
	if err := schema.RegisterTables(ctx, plain, d.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	reports, err := schema.Check(ctx, plain, d.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		for _, s := range r.Fix {
			if _, err := plain.ExecContext(ctx, s); err != nil {
				t.Fatalf("fix %q: %v", s, err)
			}
		}
	}
	// The application's route to the primary: a virtual IP / DNS name / pgbouncer that
	// the failover moves to the new primary (README "Replication and failover").
	proxy, err := netproxy.New(addrOf(pair.DSN()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	base := viaProxy(proxy.Addr())
	plainRoute, err := sql.Open(d.PlainDriver, base)
	if err != nil {
		t.Fatal(err)
	}
	defer plainRoute.Close()
	connector, err := plainRoute.Driver().(driver.DriverContext).OpenConnector(base)
	if err != nil {
		t.Fatal(err)
	}
	app := fencedsql.OpenDB(connector, fencedsql.WithDialect(d.Dialect), fencedsql.Guard(Table), fencedsql.Guard(t2))
	defer app.Close()
	h, err := NewHolders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gA, err := h.A.TryAcquire(ctx, "item")
	if err != nil {
		t.Fatal(err)
	}
	tA := gA.Token
	if _, err := app.ExecContext(fencedsql.WithToken(ctx, tA), `UPDATE `+t2+` SET holder = 'A' WHERE id = 1`); err != nil {
		t.Fatalf("A's write before the failover: %v", err)
	}
	_ = h.A.Release(ctx, gA) // A pauses; its lease ends
	gB, err := h.B.TryAcquire(ctx, "item")
	if err != nil {
		t.Fatal(err)
	}
	tB := gB.Token
	for _, q := range []string{`UPDATE ` + t2 + ` SET holder = 'B' WHERE id = 1`, `DELETE FROM ` + t2 + ` WHERE id = 2`} {
		if _, err := app.ExecContext(fencedsql.WithToken(ctx, tB), q); err != nil {
			t.Fatalf("B %q: %v", q, err)
		}
	}
	// Failover: the primary killed, the replica promoted, the route moved.
	if err := pair.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.Retarget(addrOf(pair.DSN()))
	np, err := sql.Open(d.PlainDriver, pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer np.Close()
	last, err := h.Svc.LastToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	herr := schema.RaiseTokenFloor(ctx, np, d.Dialect, last+1)
	t.Logf("tA=%d tB=%d; hook RaiseTokenFloor(%d) on the new primary: %v", tA, tB, last+1, herr)
	var tok int64
	_ = np.QueryRowContext(ctx, `SELECT fence_token FROM `+t2+` WHERE id = 1`).Scan(&tok)
	t.Logf("row 1 on the new primary carries token %d (B's %d lost)", tok, tB)
	if herr != nil {
		t.Logf("the hook refused: held")
		return
	}
	// A resumes with its old token through the application's pool. The first use of a
	// connection to the killed primary may fail as lost (57P01): retry it once, as a
	// caller does with an outcome known not to have run.
	stale := fencedsql.WithToken(ctx, tA)
	exec := func(q string) error {
		_, err := app.ExecContext(stale, q)
		if err != nil && !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
			t.Logf("%s: %v (%T, ErrCommitUnknown %v; retried)", q, err, err, errors.Is(err, fencedsql.ErrCommitUnknown))
			_, err = app.ExecContext(stale, q)
		}
		return err
	}
	uerr := exec(`UPDATE ` + t2 + ` SET holder = 'A2' WHERE id = 1`)
	derr := exec(`UPDATE ` + t2 + ` SET holder = 'A2' WHERE id = 2`) // the key B deleted under tB
	ierr := exec(`INSERT INTO ` + t2 + ` (id, holder) VALUES (3, 'A')`)
	var h1, h2 string
	_ = np.QueryRowContext(ctx, `SELECT holder FROM `+t2+` WHERE id = 1`).Scan(&h1)
	_ = np.QueryRowContext(ctx, `SELECT holder FROM `+t2+` WHERE id = 2`).Scan(&h2)
	t.Logf("stale UPDATE row 1: %v; stale UPDATE of the deleted row 2: %v; stale INSERT: %v; holders now %q, %q", uerr, derr, ierr, h1, h2)
	for _, c := range []struct {
		what string
		err  error
	}{{"UPDATE of row 1 (B's newer write lost)", uerr}, {"UPDATE of row 2 (deleted by B under tB, tombstone lost)", derr}, {"INSERT of key 3", ierr}} {
		var se *fencedsql.SchemaError
		if !errors.As(c.err, &se) || !strings.Contains(c.err.Error(), "not guarded on this server") {
			t.Errorf("token %d, below the floor %d the hook raised (and below tB=%d), %s on the new primary through the running pool: got %v, want a *SchemaError (the table is not guarded on this server)",
				tA, last+1, tB, c.what, c.err)
		}
	}
	if h1 != "zero" || h2 != "zero" { // as the new primary had them (B's write and DELETE lost)
		t.Errorf("rows changed under the stale token: holders %q, %q", h1, h2)
	}
	// A pool opened now on the new primary refuses the table (the lazy check).
	fresh, err := sql.Open(d.FencedDriver, pair.DSN()+"&"+fencedsql.ParamTables+"="+t2)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	_, ferr := fresh.ExecContext(stale, `UPDATE `+t2+` SET holder = 'A3' WHERE id = 1`)
	var se *fencedsql.SchemaError
	if !errors.As(ferr, &se) || !strings.Contains(ferr.Error(), "not guarded on this server") {
		t.Errorf("a fresh pool's stale UPDATE: %v; want a *SchemaError saying the table is not guarded on this server", ferr)
	}
}

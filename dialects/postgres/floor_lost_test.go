package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt24c: G14 "Tokens never go back" across a database failover, PostgreSQL 15.

// lostFloorSetup: guarded accounts (row 1 at token 5), floor raised to 50, then the floor
// table's row lost (a DBA's DELETE, a partial restore of the new primary). Returns the
// raw and the fenced pool.
func lostFloorSetup(t *testing.T) (raw, fenced *sql.DB) {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw = testdb.Open(t, "pgx", dsn, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	g := postgres.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1), (2, 0, 5, 1)")
	if err := schema.RaiseTokenFloor(context.Background(), raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "DELETE FROM fencedsql_floor") // the row lost
	fenced = testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	return raw, fenced
}

// TestMissingFloorRowRefusesWritesReadCommitted (fail-open). With the floor table's row gone,
// a guard's fast path refuses a token below the floor's copy (50) and sends it to the
// slow path, which reads the table: `fl := (SELECT floor … WHERE id = 1)` is NULL and
// `IF tok < fl` is NULL, so under READ COMMITTED (the default) the write is accepted —
// the floor is not enforced at all for UPDATE, INSERT and the one-statement DELETE
// (the fence function has the same read). MariaDB's guards were fixed for the same
// case in rt22b (`NOT COALESCE(tok >= floor, FALSE)`: every write refused while the
// row is missing); REPEATABLE READ on PostgreSQL also refuses (GREATEST ignores the
// NULL and takes the copy). So the outcome depends on the isolation level.
//
// Right behaviour: a missing floor row refuses (ErrBelowFloor), as on MariaDB, or at
// least the slow path uses the copy (COALESCE(table, copy)) — never "no floor".
func TestMissingFloorRowRefusesWritesReadCommitted(t *testing.T) {
	raw, fenced := lostFloorSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	stale := fencedsql.WithToken(ctx, 8) // below the floor 50 raised at the failover
	var failed []string
	if _, err := fenced.ExecContext(stale, "UPDATE accounts SET balance = 99 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		failed = append(failed, "UPDATE: "+errText(err))
	}
	if _, err := fenced.ExecContext(stale, "INSERT INTO accounts (id, balance) VALUES (3, 99)"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		failed = append(failed, "INSERT: "+errText(err))
	}
	if _, err := fenced.ExecContext(stale, "DELETE FROM accounts WHERE id = 2"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		failed = append(failed, "DELETE: "+errText(err))
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts WHERE fence_token = 8").Scan(&n); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts WHERE id = 2").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if len(failed) > 0 {
		t.Errorf("token 8 below the floor 50 (the floor row missing), READ COMMITTED: %v; rows now stamped 8: %d, row 2 deleted: %v", failed, n, left == 0)
	}
}

func errText(err error) string {
	if err == nil {
		return "accepted (nil error)"
	}
	return err.Error()
}

// TestMissingFloorRowReported (reporting). With the floor table's row lost,
// the guards enforce no floor under READ COMMITTED (TestMissingFloorRowRefusesWritesReadCommitted),
// yet the operator's tools say nothing: schema.Check reports the table Guarded with no
// problem about the floor, and schema.TokenFloor returns 0 with a nil error, as for a
// floor never raised (the copy, fencedsql_floor_seq, still says 50).
//
// Right behaviour: schema.Check reports the missing floor row as a problem (its Fix:
// GuardDDL / RaiseTokenFloor, which upsert the row), and TokenFloor reports it
// (an error, or at least the copy's value rather than 0).
func TestMissingFloorRowReported(t *testing.T) {
	raw, _ := lostFloorSetup(t)
	ctx := context.Background()
	fl, err := schema.TokenFloor(ctx, raw, postgres.Dialect)
	if err == nil && fl == 0 {
		t.Errorf("TokenFloor with the floor row missing (copy at 50): %d, nil error; want an error or 50", fl)
	}
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range reps[0].Problems {
		if strings.Contains(strings.ToLower(p), "floor") {
			found = true
		}
	}
	if !found || !reps[0].Guarded {
		t.Errorf("schema.Check with the floor row missing: Guarded %v, problems %q; want a problem naming the floor", reps[0].Guarded, reps[0].Problems)
	}
}

// lostFloorRow: guarded accounts (row 1 at token 5), floor raised to 50, then the
// floor table's row lost (rt24c's setup). The guards then refuse every token below the
// copy (50): the state rt24c F1 asked for. Returns the dsn and raw pool.
func lostFloorRow(t *testing.T) (dsn string, raw *sql.DB) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE ledger (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	g := postgres.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	if err := schema.RaiseTokenFloor(context.Background(), raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "DELETE FROM fencedsql_floor") // the row lost
	return dsn, raw
}

// staleUpdate runs a fenced UPDATE of accounts row 1 under token 20 (below the
// floor 50) and returns its error.
func staleUpdate(t *testing.T, dsn string) error {
	t.Helper()
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 99 WHERE id = 1")
	return err
}

// TestGuardInstallLeavesLostFloorRowMissing (fail-open). With the floor
// table's row lost, the guards refuse every token below the floor's copy (50), and
// schema.Check says to write the row back with RaiseTokenFloor at the lock service's
// LastToken + 1. But installing a guard on another table (fencedsql-schema -apply's Fix
// for a newly guarded table, or an upgrade of the guards: GuardDDL → FloorDDL) writes
// the row back itself: initialFloor inserts the highest floor of the *other* floor
// tables (none here: 0), ignoring this table's own copy (fencedsql_floor_seq, 50), and
// the sync trigger then sets the copy to 0. The floor is silently gone: token 20, refused
// before the install, is accepted after it, and TokenFloor reports 0 with no error.
//
// Right behaviour: an installation never lowers the floor in force: a missing row is
// written back at least at the table's own copy (GREATEST with
// pg_sequence_last_value of its own sequence), or the installation leaves the row
// missing (refusing) until RaiseTokenFloor writes it.
func TestGuardInstallLeavesLostFloorRowMissing(t *testing.T) {
	dsn, raw := lostFloorRow(t)
	if err := staleUpdate(t, dsn); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("before the install, token 20 with the floor row lost (copy 50): %v; want ErrBelowFloor", err)
	}
	// fencedsql-schema -apply for the newly guarded ledger: its Fix, in one transaction.
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range reps[0].Fix {
		if _, err := tx.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	fl, flErr := schema.TokenFloor(context.Background(), raw, postgres.Dialect)
	if err := staleUpdate(t, dsn); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after installing a guard on another table, token 20 (floor was 50, row lost): %v; TokenFloor now %d (%v); want ErrBelowFloor: an installation must not lower the floor", errText(err), fl, flErr)
	}
}

// TestRaiseAfterLostFloorRowKeepsCopyFloor (fail-open). With the floor row lost and
// the copy at 50, RaiseTokenFloor(10) — the operator following schema.Check's advice
// with a lock service whose LastToken is 9 (one switched and not yet raised, or a
// stale hook value) — writes the row back at 10 and the sync trigger sets the copy to
// 10: the floor in force goes down from 50 to 10, and token 20, refused before the
// "raise", is accepted after it. RaiseTokenFloor documents "a floor at or below a
// table's current one leaves it unchanged", and the copy is never below a committed
// floor (FloorSQLState); PostgreSQL keeps the committed floor in the copy, which the
// install's initialFloor already reads for other schemas.
//
// Right behaviour: RaiseTokenFloor on a floor table without its row writes back at
// least the table's copy: GREATEST(floor, pg_sequence_last_value(copy)).
func TestRaiseAfterLostFloorRowKeepsCopyFloor(t *testing.T) {
	dsn, raw := lostFloorRow(t)
	if err := staleUpdate(t, dsn); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("before the raise, token 20 with the floor row lost (copy 50): %v; want ErrBelowFloor", err)
	}
	if err := schema.RaiseTokenFloor(context.Background(), raw, postgres.Dialect, 10); err != nil {
		t.Fatal(err)
	}
	fl, _ := schema.TokenFloor(context.Background(), raw, postgres.Dialect)
	if err := staleUpdate(t, dsn); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after RaiseTokenFloor(10) over a lost row with copy 50, token 20: %v; TokenFloor %d; want ErrBelowFloor: a raise never lowers the floor in force", errText(err), fl)
	}
}

// TestInstallRaisesStaleOrphanFloor (fail-open). A floor table no guard reads
// any more (its schema's guards removed: UnguardDDL drops the functions, not the floor
// table) is not raised by RaiseTokenFloor, which raises only the floors the guards read.
// A later guard installation in that schema finds the table and keeps its row
// (initialFloor: "An existing row is kept"): the new guards enforce the stale floor, not
// the one the database's other guards enforce. Here: two.ledger guarded, floor 100;
// its guard removed; RaiseTokenFloor(500) at a failover (returns nil, one's floor 500);
// two.ledger guarded again — its guards read two.fencedsql_floor, still 100, and a
// lease refused since the failover (token 300) writes two.ledger.
//
// Right behaviour: an installation never starts its guards below the floors the
// database's guards enforce: initialFloor raises an existing row to the highest floor
// (and copy) of the other floor tables as well (ON CONFLICT DO UPDATE SET floor =
// GREATEST(floor, m)) — floors only go up, so this is always safe.
func TestInstallRaisesStaleOrphanFloor(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	const tbl = "(id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	admin := rawWith(t, dsn, `CREATE SCHEMA one`, `CREATE SCHEMA two`)
	g := postgres.Dialect.(dialect.Guarder)
	ledgerDDL := append([]string{"CREATE TABLE IF NOT EXISTS ledger " + tbl}, g.GuardDDL(dialect.TableName{Name: "ledger"}, "fence_token", "version")...)
	rawWith(t, fencetest.WithParam(dsn, "search_path=one"), append([]string{"CREATE TABLE accounts " + tbl}, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)...)
	two := rawWith(t, fencetest.WithParam(dsn, "search_path=two"), ledgerDDL...)
	if err := schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 100); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, two, g.UnguardDDL(dialect.TableName{Name: "ledger"})...) // two's guards removed
	if err := schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 500); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, two, ledgerDDL...) // guarded again
	var f1, f2 int64
	if err := admin.QueryRowContext(ctx, "SELECT (SELECT floor FROM one.fencedsql_floor), (SELECT floor FROM two.fencedsql_floor)").Scan(&f1, &f2); err != nil {
		t.Fatal(err)
	}
	fl, flErr := schema.TokenFloor(ctx, admin, postgres.Dialect)
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=two.ledger"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 300), "INSERT INTO two.ledger (id, balance) VALUES (1, 1)")
	if !errors.Is(werr, fencedsql.ErrBelowFloor) {
		t.Errorf("after RaiseTokenFloor(500) and guarding two.ledger again: floors one=%d two=%d (TokenFloor %d, %v); token 300 on two.ledger: %v; want ErrBelowFloor", f1, f2, fl, flErr, errText(werr))
	}
}

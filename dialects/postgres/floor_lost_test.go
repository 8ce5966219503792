package postgres_test

// Red-team rt24c: G16 "Tokens never go back" across a database failover, PostgreSQL 15.

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

// rt24cSetup: guarded accounts (row 1 at token 5), floor raised to 50, then the floor
// table's row lost (a DBA's DELETE, a partial restore of the new primary). Returns the
// raw and the fenced pool.
func rt24cSetup(t *testing.T) (raw, fenced *sql.DB) {
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

// TestRTrt24cMissingFloorRowReadCommitted (fail-open). With the floor table's row gone,
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
func TestRTrt24cMissingFloorRowReadCommitted(t *testing.T) {
	raw, fenced := rt24cSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	stale := fencedsql.WithToken(ctx, 8) // below the floor 50 raised at the failover
	var failed []string
	if _, err := fenced.ExecContext(stale, "UPDATE accounts SET balance = 99 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		failed = append(failed, "UPDATE: "+rt24cErr(err))
	}
	if _, err := fenced.ExecContext(stale, "INSERT INTO accounts (id, balance) VALUES (3, 99)"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		failed = append(failed, "INSERT: "+rt24cErr(err))
	}
	if _, err := fenced.ExecContext(stale, "DELETE FROM accounts WHERE id = 2"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		failed = append(failed, "DELETE: "+rt24cErr(err))
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

func rt24cErr(err error) string {
	if err == nil {
		return "accepted (nil error)"
	}
	return err.Error()
}

// TestRTrt24cMissingFloorRowNotReported (reporting). With the floor table's row lost,
// the guards enforce no floor under READ COMMITTED (TestRTrt24cMissingFloorRowReadCommitted),
// yet the operator's tools say nothing: schema.Check reports the table Guarded with no
// problem about the floor, and schema.TokenFloor returns 0 with a nil error, as for a
// floor never raised (the copy, fencedsql_floor_seq, still says 50).
//
// Right behaviour: schema.Check reports the missing floor row as a problem (its Fix:
// GuardDDL / RaiseTokenFloor, which upsert the row), and TokenFloor reports it
// (an error, or at least the copy's value rather than 0).
func TestRTrt24cMissingFloorRowNotReported(t *testing.T) {
	raw, _ := rt24cSetup(t)
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

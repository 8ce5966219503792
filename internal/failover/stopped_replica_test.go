package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// A MariaDB replica whose replication is configured but stopped as a whole (STOP SLAVE /
// STOP ALL SLAVES: the state an orchestrator leaves a candidate in mid-failover, or a
// replica paused for maintenance), read_only OFF (MariaDB's default), shows no sign of
// replication to the one-SELECT writable-primary test (no replication thread, status
// Slaves_running 0). Red-team rt48i F1, F2: the fenced pool wrote there and
// RaiseTokenFloor / MaxToken ran there. The one server-role judgement now also lists the
// replication connections (dialect.ReplicationLister): configured means not a primary.

// stoppedReplica starts an async pair with the guards installed, runs prepare on the
// primary through a fenced pool, waits until the replica has row 2, and stops the
// replica's replication with stop (read_only OFF).
func stoppedReplica(t *testing.T, ctx context.Context, stop string, prepare func(primary *sql.DB)) (pair *MariaDBPair, primary *sql.DB) {
	t.Helper()
	pair = asyncMariaDBPair(t, ctx, needEnv(t))
	if _, err := Install(ctx, pair.DSN(), myDB); err != nil {
		t.Fatal(err)
	}
	primary, err := sql.Open(myDB.FencedDriver, FencedDSN(pair.DSN()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { primary.Close() })
	prepare(primary)
	replicaDSN := pair.replica.dsn(mariaDBDatabase)
	waitReplicaRow(ctx, t, "mysql", replicaDSN, `SELECT count(*) FROM `+Table+` WHERE id = 2`, pair.replica.srv)
	if err := myDo(ctx, replicaDSN, func(db *sql.DB) error {
		for _, q := range []string{stop, `SET GLOBAL read_only = OFF`} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return pair, primary
}

// replicaAccount creates, on the replica (its replication stopped, so nothing comes
// from the primary), an account name with the application's rights on the database
// and the global privileges extra (none: ""), and returns its DSN.
func replicaAccount(t *testing.T, ctx context.Context, pair *MariaDBPair, name, extra string) string {
	t.Helper()
	stmts := []string{
		`CREATE USER '` + name + `'@'%' IDENTIFIED BY 'pw'`,
		`GRANT SELECT, INSERT, UPDATE, DELETE, EXECUTE ON ` + mariaDBDatabase + `.* TO '` + name + `'@'%'`,
	}
	if extra != "" {
		stmts = append(stmts, `GRANT `+extra+` ON *.* TO '`+name+`'@'%'`)
	}
	if err := myDo(ctx, pair.replica.dsn(""), func(db *sql.DB) error {
		for _, q := range stmts {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s:pw@tcp(127.0.0.1:%d)/%s?parseTime=true&timeout=5s", name, pair.replica.port, mariaDBDatabase)
}

// TestMariaDBStoppedReplicaIsNotPrimary (red-team rt48i F1): the primary writes rows 1
// and 2 under token 30, the replica stops replicating, the primary then updates row 1
// and deletes row 2 under token 50 and raises its floor to 51. A new fenced pool on the
// replica must refuse token 40's UPDATE of row 1 and re-insert of row 2 with
// ErrNotPrimary (a *SessionError), for the harness's account (ALL PRIVILEGES) and for an
// application account that has only SLAVE MONITOR beyond its table rights (no PROCESS,
// no SUPER). Reads still pass.
func TestMariaDBStoppedReplicaIsNotPrimary(t *testing.T) {
	for _, stop := range []string{`STOP ALL SLAVES`, `STOP SLAVE`} {
		t.Run(stop, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			pair, primary := stoppedReplica(t, ctx, stop, func(primary *sql.DB) {
				for _, id := range []int64{1, 2} {
					if _, err := primary.ExecContext(fencedsql.WithToken(ctx, 30), myDB.Upsert, id, "zero"); err != nil {
						t.Fatal(err)
					}
				}
			})
			for _, q := range []string{`UPDATE ` + Table + ` SET holder = 'B' WHERE id = 1`, `DELETE FROM ` + Table + ` WHERE id = 2`} {
				if _, err := primary.ExecContext(fencedsql.WithToken(ctx, 50), q); err != nil {
					t.Fatal(err)
				}
			}
			if err := myDo(ctx, pair.DSN(), func(db *sql.DB) error { return schema.RaiseTokenFloor(ctx, db, myDB.Dialect, 51) }); err != nil {
				t.Fatal(err)
			}
			accounts := map[string]string{
				"harness account (ALL PRIVILEGES)":       pair.replica.dsn(mariaDBDatabase),
				"application account with SLAVE MONITOR": replicaAccount(t, ctx, pair, "appmon", "SLAVE MONITOR"),
			}
			for what, dsn := range accounts {
				pool, err := sql.Open(myDB.FencedDriver, FencedDSN(dsn))
				if err != nil {
					t.Fatal(err)
				}
				stale := fencedsql.WithToken(ctx, 40)
				for _, c := range []struct {
					q    string
					args []any
				}{
					{`UPDATE ` + Table + ` SET holder = 'A' WHERE id = 1`, nil},
					{myDB.Upsert, []any{2, "A"}},
				} {
					_, err := pool.ExecContext(stale, c.q, c.args...)
					var se *fencedsql.SessionError
					if !errors.Is(err, fencedsql.ErrNotPrimary) || !errors.As(err, &se) || !se.NotPrimary {
						t.Errorf("%s: token 40 %q through a fenced pool on the replica whose replication is stopped: %v; want ErrNotPrimary (a *SessionError)", what, c.q, err)
					}
				}
				var holder string
				if err := pool.QueryRowContext(ctx, `SELECT holder FROM `+Table+` WHERE id = 1`).Scan(&holder); err != nil || holder != "zero" {
					t.Errorf("%s: a read on the stopped replica: %q, %v; want the replica's row (reads are not refused)", what, holder, err)
				}
				pool.Close()
			}
		})
	}
}

// TestMariaDBFloorToolsOnStoppedReplicaRefused (red-team rt48i F2): on a replica whose
// replication is stopped (STOP ALL SLAVES, read_only OFF), RaiseTokenFloor — the
// failover hook's raise — and MaxToken fail with ErrNotPrimary, nothing written (the
// replica's floor stays 50); RaiseTokenFloorReadOnly too (the same judgement). An
// account that may not list the replication connections (no SLAVE MONITOR, no SUPER)
// cannot tell such a replica from a primary: the tools fail closed with
// ErrServerRoleUnknown. And a primary with a replication connection configured (a
// multi-source leftover, never started) is refused as well.
func TestMariaDBFloorToolsOnStoppedReplicaRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pair, _ := stoppedReplica(t, ctx, `STOP ALL SLAVES`, func(primary *sql.DB) {
		for _, id := range []int64{1, 2} {
			if _, err := primary.ExecContext(fencedsql.WithToken(ctx, 30), myDB.Upsert, id, "zero"); err != nil {
				t.Fatal(err)
			}
		}
	})
	raw, err := sql.Open("mysql", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	replica, err := sql.Open("mysql", pair.replica.dsn(mariaDBDatabase))
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	before, err := schema.TokenFloor(ctx, replica, myDB.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(ctx, replica, myDB.Dialect, 100); !errors.Is(err, schema.ErrNotPrimary) {
		t.Errorf("RaiseTokenFloor(100) on a replica whose replication is stopped: %v; want ErrNotPrimary", err)
	}
	if err := schema.RaiseTokenFloorReadOnly(ctx, replica, myDB.Dialect, 100); !errors.Is(err, schema.ErrNotPrimary) {
		t.Errorf("RaiseTokenFloorReadOnly(100) on a replica whose replication is stopped: %v; want ErrNotPrimary", err)
	}
	if _, err := raw.ExecContext(ctx, `INSERT INTO `+Table+` (id, holder, fence_token) VALUES (7, 'x', 500)`); err != nil {
		t.Fatal(err)
	}
	if m, err := schema.MaxToken(ctx, replica, myDB.Dialect); !errors.Is(err, schema.ErrNotPrimary) {
		t.Errorf("MaxToken on a replica whose replication is stopped: %d, %v; want ErrNotPrimary (the primary has accepted 500)", m, err)
	}
	if f, err := schema.TokenFloor(ctx, replica, myDB.Dialect); err != nil || f != before {
		t.Errorf("the replica's floor after the refused raises: %d, %v; want %d (nothing written)", f, err, before)
	}
	// An account that cannot list the replication connections: fail closed.
	blind, err := sql.Open("mysql", replicaAccount(t, ctx, pair, "appblind", "READ_ONLY ADMIN"))
	if err != nil {
		t.Fatal(err)
	}
	defer blind.Close()
	if err := schema.RaiseTokenFloor(ctx, blind, myDB.Dialect, 100); !errors.Is(err, schema.ErrServerRoleUnknown) {
		t.Errorf("RaiseTokenFloor by an account without SLAVE MONITOR on the stopped replica: %v; want ErrServerRoleUnknown", err)
	}
	if m, err := schema.MaxToken(ctx, blind, myDB.Dialect); !errors.Is(err, schema.ErrServerRoleUnknown) {
		t.Errorf("MaxToken by an account without SLAVE MONITOR on the stopped replica: %d, %v; want ErrServerRoleUnknown", m, err)
	}
	// A primary with a replication connection configured (multi-source, or a leftover
	// of an earlier role without RESET SLAVE ALL) is not a primary either.
	if _, err := raw.ExecContext(ctx, `CHANGE MASTER 'leftover' TO MASTER_HOST = '127.0.0.1', MASTER_PORT = 1, MASTER_USER = 'nobody'`); err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, myDB.Dialect, 600); !errors.Is(err, schema.ErrNotPrimary) {
		t.Errorf("RaiseTokenFloor on a primary with a replication connection configured: %v; want ErrNotPrimary", err)
	}
	if _, err := raw.ExecContext(ctx, `RESET SLAVE 'leftover' ALL`); err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, myDB.Dialect, 600); err != nil {
		t.Errorf("RaiseTokenFloor on the primary after RESET SLAVE 'leftover' ALL: %v; want nil", err)
	}
}

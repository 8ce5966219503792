package failover

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// Two checks on one asynchronous MariaDB pair (one pair start for both), each
// independent of the other's outcome.
//
// RaiseRefusedInUnreplicatedSession (red-team rt42f F3): a raise through a session
// whose writes stay out of the binary log (sql_log_bin = 0, a DSN parameter
// go-sql-driver/mysql sends as SET) or are marked for the replicas to skip
// (skip_replication = 1) returned nil while the caught-up replica kept the old floor: a
// failover forgot it. Now refused with ErrRaiseNotReplicated, nothing written.
//
// FencedPoolOnReplicaRefused (red-team rt42f F2): a fenced pool on a replica — read_only
// off (MariaDB's default for a replica) or on with an account that has READ_ONLY ADMIN
// — acknowledged a stale token's UPDATE and its re-insert of a key the primary deleted
// under a newer token, judged by the replica's lagging floor and rows, never reaching
// the primary. The pool's per-connection session check now refuses guarded writes
// there (ErrNotPrimary, a *SessionError), as RaiseTokenFloor does.
func TestMariaDBReplicaFloorChecks(t *testing.T) {
	env := needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pair := asyncMariaDBPair(t, ctx, env)
	if _, err := Install(ctx, pair.DSN(), myDB); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("mysql", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	replicaDSN := pair.replica.dsn(mariaDBDatabase)
	t.Run("FencedPoolOnReplicaRefused", func(t *testing.T) {
		primary, err := sql.Open(myDB.FencedDriver, FencedDSN(pair.DSN()))
		if err != nil {
			t.Fatal(err)
		}
		defer primary.Close()
		for _, id := range []int64{1, 2} {
			if _, err := primary.ExecContext(fencedsql.WithToken(ctx, 30), myDB.Upsert, id, "zero"); err != nil {
				t.Fatal(err)
			}
		}
		waitReplicaRow(ctx, t, "mysql", replicaDSN, `SELECT count(*) FROM `+Table+` WHERE id = 2`, pair.replica.srv)
		if err := pair.Detach(ctx); err != nil { // the replica lags
			t.Fatal(err)
		}
		for _, q := range []string{`UPDATE ` + Table + ` SET holder = 'B' WHERE id = 1`, `DELETE FROM ` + Table + ` WHERE id = 2`} {
			if _, err := primary.ExecContext(fencedsql.WithToken(ctx, 50), q); err != nil {
				t.Fatal(err)
			}
		}
		if err := schema.RaiseTokenFloor(ctx, raw, myDB.Dialect, 51); err != nil {
			t.Fatal(err)
		}
		for _, readOnly := range []string{"OFF", "ON"} {
			if err := myDo(ctx, replicaDSN, func(db *sql.DB) error {
				_, err := db.ExecContext(ctx, `SET GLOBAL read_only = `+readOnly)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			pool, err := sql.Open(myDB.FencedDriver, FencedDSN(replicaDSN))
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
					t.Errorf("read_only=%s: token 40 %q through a fenced pool on the replica: %v; want ErrNotPrimary (a *SessionError)", readOnly, c.q, err)
				}
			}
			var holder string
			if err := pool.QueryRowContext(ctx, `SELECT holder FROM `+Table+` WHERE id = 1`).Scan(&holder); err != nil || holder != "zero" {
				t.Errorf("read_only=%s: a read on the replica: %q, %v; want the replica's row (reads are not refused)", readOnly, holder, err)
			}
			pool.Close()
		}
	})
	t.Run("RaiseRefusedInUnreplicatedSession", func(t *testing.T) {
		before, err := schema.TokenFloor(ctx, raw, myDB.Dialect)
		if err != nil {
			t.Fatal(err)
		}
		for i, param := range []string{"sql_log_bin=0", "skip_replication=1"} {
			want := before + uint64(100+i)
			db, err := sql.Open("mysql", pair.DSN()+"&"+param)
			if err != nil {
				t.Fatal(err)
			}
			raiseErr := schema.RaiseTokenFloor(ctx, db, myDB.Dialect, want)
			db.Close()
			if !errors.Is(raiseErr, schema.ErrRaiseNotReplicated) {
				t.Errorf("RaiseTokenFloor(%d) through a DSN with %s: %v; want ErrRaiseNotReplicated", want, param, raiseErr)
			}
		}
		if f, err := schema.TokenFloor(ctx, raw, myDB.Dialect); err != nil || f != before {
			t.Errorf("the primary's floor after the refused raises: %d, %v; want %d (nothing written)", f, err, before)
		}
	})
}

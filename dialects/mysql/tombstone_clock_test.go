package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// tombstoneClockSetup creates accounts (rows 1 and 2 under token 5) with the guard and
// the tombstone guard installed (schema.Check's fix) and a function that sets the
// caller's session clock, and returns the database's DSN and an admin pool.
func tombstoneClockSetup(t *testing.T, ctx context.Context) (string, *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, balance, fence_token) VALUES (1, 100, 5), (2, 100, 5)",
		"CREATE FUNCTION set_clock() RETURNS INT BEGIN SET timestamp = 1000000; RETURN 1; END",
	)
	reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		testdb.Exec(t, admin, r.Fix...)
	}
	return dsn, admin
}

// TestTombstoneNotBackdatedBySessionClock: a session whose clock was set (SET
// timestamp, on a plain connection or by a stored function called through the fenced
// pool) deletes a row, or moves it to another key; the tombstone of the key it left
// is dated by the server's clock, so PurgeTombstones with a day's retention keeps it
// and a stale holder cannot re-create the key (G9; red-team rt10t F2, rt10f F3).
func TestTombstoneNotBackdatedBySessionClock(t *testing.T) {
	for _, c := range []struct{ name, setClock, write string }{
		{"DELETE on a plain connection", "SET timestamp = 1000000000", "DELETE FROM accounts WHERE id = 2"},
		{"rekey on a plain connection", "SET timestamp = 1000000000", "UPDATE accounts SET id = 3, fence_token = fence_token, version = version + 1 WHERE id = 2"},
		{"fenced DELETE after a function set the clock", "SELECT set_clock()", ""},
		// Controls: the server's clock converted from the session's time zone.
		{"DELETE under time_zone -12:00", "SET time_zone = '-12:00'", "DELETE FROM accounts WHERE id = 2"},
		{"rekey under time_zone +13:00", "SET time_zone = '+13:00'", "UPDATE accounts SET id = 3, fence_token = fence_token, version = version + 1 WHERE id = 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dsn, admin := tombstoneClockSetup(t, ctx)
			admin.SetMaxOpenConns(1) // the purge below runs in the session's time zone
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
			fenced.SetMaxOpenConns(1)
			if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id = 2"); err != nil {
				t.Fatalf("guarded write under 40: %v", err)
			}
			if c.write == "" {
				var one int
				if err := fenced.QueryRowContext(ctx, c.setClock).Scan(&one); err != nil {
					t.Fatalf("%s: %v", c.setClock, err)
				}
				if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM accounts WHERE id = 2"); err != nil {
					// Refused (the session check saw the clock): nothing deleted, safe.
					return
				}
			} else {
				conn, err := admin.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range []string{c.setClock, c.write} {
					if _, err := conn.ExecContext(ctx, q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				if _, err := conn.ExecContext(ctx, "SET timestamp = DEFAULT"); err != nil {
					t.Fatal(err)
				}
				conn.Close()
			}
			var age int64
			if err := admin.QueryRowContext(ctx, "SELECT TIMESTAMPDIFF(SECOND, deleted_at, UTC_TIMESTAMP()) FROM fencedsql_tomb_accounts WHERE id = 2").Scan(&age); err != nil {
				t.Fatalf("reading the tombstone of key 2: %v", err)
			}
			if age < -60 || age > 60 {
				t.Errorf("tombstone of key 2 dated %d s from now, want the server's clock", age)
			}
			n, err := schema.PurgeTombstones(ctx, admin, mysql.Dialect, 24*time.Hour, "accounts")
			if err != nil {
				t.Fatalf("PurgeTombstones: %v", err)
			}
			stale := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
			_, err = stale.ExecContext(fencedsql.WithToken(ctx, 30), "INSERT INTO accounts (id, balance) VALUES (2, 666)")
			if n != 0 || !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("PurgeTombstones(24h) removed %d tombstone(s); a stale INSERT (token 30) of the key left under 40: %v, want ErrFenced", n, err)
			}
		})
	}
}

// TestTombstoneSessionClockTriggersReported: tombstone triggers of the version that
// dated by UTC_TIMESTAMP(6) (the session's clock) are reported by schema.Check, whose
// fix re-creates them.
func TestTombstoneSessionClockTriggersReported(t *testing.T) {
	for _, kind := range []string{"del", "key"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, admin := tombstoneClockSetup(t, ctx)
			ddl := mysql.Dialect.(dialect.Tombstoner).TombstoneDDL(dialect.TableName{Name: "accounts"},
				[]dialect.KeyColumn{{Name: "id", Type: "bigint(20)"}}, "fence_token")
			for _, q := range ddl {
				if strings.HasPrefix(q, "CREATE TRIGGER `fencedsql_tomb"+kind+"_") {
					old := strings.ReplaceAll(q, "CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00')", "UTC_TIMESTAMP(6)")
					testdb.Exec(t, admin, "DROP TRIGGER `fencedsql_tomb"+kind+"_accounts`", old)
				}
			}
			reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != 1 || len(reports[0].Fix) == 0 || !strings.Contains(strings.Join(reports[0].Fix, "\n"), "SYSDATE(6)") {
				t.Errorf("tombstone trigger %s dating by UTC_TIMESTAMP(6): schema.Check reports %+v, want the triggers re-created", kind, reports)
			}
		})
	}
}

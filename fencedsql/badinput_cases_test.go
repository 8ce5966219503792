// The table of bad inputs and the typed error each one must get.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
)

func badCases() []badCase {
	bg := context.Background()
	canceled, cancel := context.WithCancel(fencedsql.WithToken(bg, 9))
	cancel()
	huge := uint64(math.MaxInt64) + 1
	return []badCase{
		// ---- malformed SQL on a guarded table ----
		{name: "unterminated string", kind: badUnsupported,
			run: badExec(`UPDATE accounts SET balance = 'oops WHERE id = ?`, 1)},
		{name: "unterminated comment", kind: badUnsupported,
			run: badExec(`UPDATE accounts SET balance = 0 /* WHERE id = ?`, 1)},
		{name: "unterminated quoted identifier", kind: badUnsupported,
			run: badExec(`UPDATE "accounts SET balance = 0`)},
		{name: "NUL byte", kind: badUnsupported,
			run: badExec("UPDATE accounts SET balance = 0\x00 WHERE id = 1")},
		{name: "malformed, through Prepare", kind: badUnsupported,
			run: badPrepared(`DELETE FROM accounts WHERE note = 'oops`)},
		{name: "malformed, through Query", kind: badUnsupported,
			run: badQuery(`UPDATE accounts SET balance = 0 WHERE id = 'oops RETURNING id`)},

		// ---- forms the rewriter cannot fence ----
		{name: "INSERT … SELECT", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts (id, balance) SELECT 2, 0`)},
		{name: "INSERT without a column list", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts VALUES (2, 0, 0, 0)`)},
		{name: "INSERT DEFAULT VALUES", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts DEFAULT VALUES`)},
		{name: "INSERT OR REPLACE", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT OR REPLACE INTO accounts (id, balance) VALUES (1, 0)`)},
		{name: "UPDATE OR IGNORE", kind: badUnsupported, table: "accounts",
			run: badExec(`UPDATE OR IGNORE accounts SET balance = 0`)},
		{name: "REPLACE", kind: badUnsupported, table: "accounts",
			run: badExec(`REPLACE INTO accounts (id, balance) VALUES (1, 0)`)},
		{name: "writing CTE", kind: badUnsupported,
			run: badExec(`WITH x AS (SELECT 1 AS id) DELETE FROM accounts WHERE id IN (SELECT id FROM x)`)},
		{name: "multi-statement string", kind: badUnsupported,
			run: badExec(`UPDATE other SET v = 0; UPDATE accounts SET balance = 0`)},
		{name: "multi-statement string, guarded first", kind: badUnsupported,
			run: badExec(`DELETE FROM accounts; SELECT 1`)},
		{name: "numbered ?NNN placeholder", kind: badUnsupported, table: "accounts",
			run: badExec(`UPDATE accounts SET balance = ?1 WHERE id = ?2`, 0, 1)},
		{name: "named :id placeholder", kind: badUnsupported, table: "accounts",
			run: badExec(`DELETE FROM accounts WHERE id = :id`, sql.Named("id", 1))},
		{name: "SAVEPOINT as text outside a transaction", kind: badUnsupported,
			run: badExec(`SAVEPOINT a`)},
		{name: "RELEASE SAVEPOINT as text outside a transaction", kind: badUnsupported,
			run: badExec(`RELEASE SAVEPOINT a`)},
		{name: "ROLLBACK TO as text outside a transaction", kind: badUnsupported,
			run: badExec(`ROLLBACK TO a`)},
		{name: "DELETE … RETURNING outside a transaction", kind: badUnsupported, table: "accounts",
			run: badQuery(`DELETE FROM accounts WHERE id = ? RETURNING id`, 1)},
		{name: "unknown statement naming a guarded table", kind: badUnsupported,
			run: badExec(`UPSERT accounts SET balance = 0`)},
		{name: "string literal used as the table name", kind: badUnsupported,
			run: badExec(`INSERT INTO 'accounts' (id, balance) SELECT 2, 0`)},

		// ---- reserved columns assigned ----
		{name: "UPDATE sets fence_token in a row assignment", kind: badUnsupported, table: "accounts",
			run: badExec(`UPDATE accounts SET (v, fence_token) = (0, 999) WHERE id = 1`),
			check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "fence_token") {
					t.Errorf("error does not name the column: %v", err)
				}
			}},
		{name: "upsert sets version in a row assignment", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts (id, v) VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET (v, version) = (0, 0)`)},

		// ---- schema ----
		{name: "guarded table without the fencing columns", kind: badSchema, table: "bare", sqliteOnly: true,
			run: badExec(`UPDATE bare SET v = 0 WHERE id = ?`, 1),
			check: func(t *testing.T, err error) {
				var se *fencedsql.SchemaError
				errors.As(err, &se)
				if !strings.Contains(se.Problem, "fence_token") || !strings.Contains(se.Problem, "version") {
					t.Errorf("Problem %q does not name both columns", se.Problem)
				}
				for _, want := range []string{"ALTER TABLE bare ADD COLUMN", `"fence_token" BIGINT NOT NULL DEFAULT 0`, `"version" BIGINT NOT NULL DEFAULT 0`} {
					if !strings.Contains(se.Fix, want) {
						t.Errorf("Fix %q lacks %q", se.Fix, want)
					}
				}
			}},

		// ---- tokens ----
		{name: "no token", kind: badNoToken, table: "accounts",
			run: badExecCtx(bg, `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "token 0", kind: badNoToken, table: "accounts",
			run: badExecCtx(fencedsql.WithToken(bg, 0), `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "nil lease", kind: badNoToken, table: "accounts",
			run: badExecCtx(fencedsql.WithLease(bg, nil), `DELETE FROM accounts WHERE id = ?`, 1)},
		{name: "nil *lockclient.Lease (what a failed Acquire returns)", kind: badNoToken, table: "accounts",
			run: badExecCtx(fencedsql.WithLease(bg, (*lockclient.Lease)(nil)), `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "nil lease bound to a transaction", kind: badNoToken, table: "accounts", tx: true,
			run: badInTx(fencedsql.WithLease(bg, nil), `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 2, 0)},
		{name: "token > MaxInt64", kind: badNoToken, table: "accounts",
			run: badExecCtx(fencedsql.WithToken(bg, huge), `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "token MaxUint64", kind: badNoToken, table: "accounts",
			run: badExecCtx(fencedsql.WithToken(bg, math.MaxUint64), `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 2, 0)},
		// A token that does not fit a BIGINT must be refused inside a transaction too:
		// bound as int64 it would wrap to a negative number, and an INSERT would record it.
		{name: "token > MaxInt64 bound to a transaction, INSERT", kind: badNoToken, table: "accounts", tx: true,
			run: badInTxCommit(fencedsql.WithToken(bg, huge), `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 2, 0)},
		{name: "token > MaxInt64 bound to a transaction, UPDATE", kind: badNoToken, table: "accounts", tx: true,
			run: badInTx(fencedsql.WithToken(bg, huge), `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "lease token > MaxInt64 bound to a transaction", kind: badNoToken, table: "accounts", tx: true,
			run: badInTxCommit(fencedsql.WithLease(bg, badLease{math.MaxUint64}), `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 3, 0)},

		// ---- cancelled context ----
		{name: "cancelled context", kind: badCanceled,
			run: badExecCtx(canceled, `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "cancelled context, DELETE", kind: badCanceled,
			run: badExecCtx(canceled, `DELETE FROM accounts WHERE id = ?`, 1)},
		{name: "cancelled context, BeginTx", kind: badCanceled,
			run: badInTx(canceled, `UPDATE accounts SET balance = 0 WHERE id = ?`, 1)},
		{name: "cancelled context, prepared statement", kind: badCanceled,
			prepare: `UPDATE accounts SET balance = 0, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`,
			run: func(_ context.Context, db *sql.DB) error {
				st, err := db.PrepareContext(fencedsql.WithToken(bg, 9), `UPDATE accounts SET balance = 0 WHERE id = ?`)
				if err != nil {
					return err
				}
				defer st.Close()
				_, err = st.ExecContext(canceled, 1)
				return err
			}},

		// ---- arguments ----
		{name: "too few arguments", kind: badUnsupported, table: "accounts",
			run: badExec(`UPDATE accounts SET balance = ? WHERE id = ?`, 0)},
		{name: "too many arguments", kind: badUnsupported, table: "accounts",
			run: badExec(`UPDATE accounts SET balance = ? WHERE id = ?`, 0, 1, 2)},
		{name: "too few arguments, DELETE", kind: badUnsupported, table: "accounts",
			run: badExec(`DELETE FROM accounts WHERE id = ? OR id = ?`, 1)},
		{name: "too many arguments, INSERT", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts (id, balance) VALUES (?, ?)`, 2, 0, 0)},
		{name: "too few arguments, prepared", kind: badArgCount,
			prepare: `UPDATE accounts SET balance = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`,
			run:     badPrepared(`UPDATE accounts SET balance = ? WHERE id = ?`, 0)},
		{name: "named arguments on a guarded write", kind: badUnsupported, table: "accounts",
			run: badExec(`UPDATE accounts SET balance = ? WHERE id = ?`, sql.Named("b", 0), sql.Named("id", 1))},
		{name: "one named argument on a guarded write", kind: badUnsupported, table: "accounts",
			run: badExec(`INSERT INTO accounts (id, balance) VALUES (?, ?)`, 2, sql.Named("b", 0))},
		{name: "named arguments on a guarded DELETE", kind: badUnsupported, table: "accounts",
			run: badExec(`DELETE FROM accounts WHERE id = ?`, sql.Named("id", 1))},

		// ---- malformed: a DELETE that ends in WHERE (last: it panics the rewriter) ----
		{name: "DELETE ending in WHERE", kind: badUnsupported, table: "accounts",
			run: badExec(`DELETE FROM accounts WHERE`)},
		{name: "DELETE ending in WHERE and a comment", kind: badUnsupported, table: "accounts",
			run: badExec(`DELETE FROM accounts WHERE -- nothing`)},
	}
}

// Writes of unusual but plain forms, run on the real servers against the raw driver
// (red-team rt34c F2–F5): quoted case twins of the fencing columns (PostgreSQL),
// MariaDB's PARTITION selection, PostgreSQL's ONLY (t), a SQLite DELETE through the
// database file ATTACHed to itself. Each is fenced (stale token) and does what the raw
// driver does (fresh token).

package redteam

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// rawLikeCase is one statement sequence run on a fresh database through the fenced pool.
type rawLikeCase struct {
	name  string
	setup []string // raw driver, before (the migration's objects)
	steps []string // fenced pool, one connection, in order
}

// fencedLikeRaw: a plain fenceable write or locking read (one table, one statement)
// whose only unusual part is a clause the server accepts; the stale token must be
// fenced (ErrFenced), the fresh token must do what the raw driver does (the fencing
// columns aside).
func fencedLikeRaw(t *testing.T, b backend, cases []rawLikeCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := entry{class: "writeforms", name: c.name, setup: c.setup}
			for _, st := range c.steps {
				e.steps = append(e.steps, s(st))
				// a locking read is claimed in a transaction (outside one it is refused)
				e.tx = e.tx || strings.Contains(st, "FOR UPDATE")
			}
			raw := freshDB(t, b, e)
			plain, _ := raw.open(false, nil)
			if r := run(raw.ctx, plain, e); r.err != nil {
				t.Fatalf("case wrong: step %d fails on the raw driver: %v", r.at+1, r.err)
			}
			rawAfter := raw.snap()

			d := freshDB(t, b, e)
			base := d.snap()
			w, _ := d.open(true, nil)
			r := run(tokenCtx(d.ctx, staleToken), w, e)
			if df := diff(base, d.snap()); df != "" {
				t.Fatalf("stale token changed data (err=%v):\n%s", r.err, indent(df))
			}
			if !errors.Is(r.err, fencedsql.ErrFenced) {
				t.Errorf("OVER-REFUSAL on %s: stale token: err=%v, want ErrFenced (the statement is a plain single-table write)\n    %s",
					b.name, r.err, strings.Join(c.steps, "\n    "))
			}
			w2, _ := d.open(true, nil) // a new pool: new connections (an ATTACH is per connection)
			r = run(tokenCtx(d.ctx, freshToken), w2, e)
			if r.err != nil {
				t.Errorf("OVER-REFUSAL on %s: fresh token %d: err=%v, want the raw driver's result\n    %s",
					b.name, freshToken, r.err, strings.Join(c.steps, "\n    "))
			} else if df := diff(rawAfter.masked(), d.snap().masked()); df != "" {
				t.Errorf("WRONG RESULT on %s: fresh token %d: the statement succeeded but the table differs from the raw driver's beyond the fencing columns (raw → fenced):\n%s\n    %s", b.name, freshToken, indent(df), strings.Join(c.steps, "\n    "))
			}
		})
	}
}

// TestPartitionSelectionFencedMariaDB: MariaDB's explicit partition selection on a
// single-table write (`UPDATE accounts PARTITION (p0) SET …`, `DELETE FROM accounts
// PARTITION (p1) …`, `INSERT INTO accounts PARTITION (p1) (id, balance) … ON DUPLICATE
// KEY UPDATE …`) is fenced like the write without it and does what the raw driver does
// (red-team rt34c F3: refused with reasons wrong for the text, "a multi-table UPDATE
// whose table list it cannot read", "DELETE with an unexpected clause \"(\"", "INSERT
// without a column list").
func TestPartitionSelectionFencedMariaDB(t *testing.T) {
	part := []string{"ALTER TABLE accounts PARTITION BY HASH (id) PARTITIONS 2"}
	fencedLikeRaw(t, mysqlBackend(), []rawLikeCase{
		{"update_partition", part, []string{"UPDATE accounts PARTITION (p0) SET balance = 0"}},
		{"delete_partition", part, []string{"DELETE FROM accounts PARTITION (p1) WHERE id = 1"}},
		{"upsert_partition", part, []string{"INSERT INTO accounts PARTITION (p1) (id, balance) VALUES (1, 5) ON DUPLICATE KEY UPDATE balance = 5"}},
	})
}

// TestOnlyParenthesisedFencedPostgres: `UPDATE ONLY (accounts) SET …` and `DELETE FROM
// ONLY (accounts) …`, the parenthesised ONLY PostgreSQL accepts, are fenced like `ONLY
// accounts` (red-team rt34c F4: refused as "an UPDATE of a shape the rewriter does not
// know"); a locking read of `ONLY (accounts)` or of `accounts *` is claimed like one of
// `accounts` (refused as not a plain table, or as a join).
func TestOnlyParenthesisedFencedPostgres(t *testing.T) {
	fencedLikeRaw(t, postgresBackend(), []rawLikeCase{
		{"update_only_paren", nil, []string{"UPDATE ONLY (accounts) SET balance = 0 WHERE id = 1"}},
		{"delete_only_paren", nil, []string{"DELETE FROM ONLY (accounts) WHERE id = 1"}},
		{"lock_only_paren", nil, []string{"SELECT * FROM ONLY (accounts) WHERE id = 1 FOR UPDATE"}},
		{"lock_descendants_star", nil, []string{"SELECT * FROM accounts * WHERE id = 1 FOR UPDATE"}},
		{"lock_only_paren_limit", nil, []string{"SELECT * FROM ONLY (accounts) a WHERE a.id > 0 ORDER BY a.id LIMIT 1 FOR UPDATE OF a"}},
	})
}

// TestSelfAttachedDeleteSQLite: with the database file ATTACHed to itself (`ATTACH
// (SELECT file FROM pragma_database_list WHERE name = 'main') AS aux`), `DELETE FROM
// aux.accounts WHERE id = 1` is fenced and deletes as on the raw driver (red-team
// rt34c F5: with a fresh token its keyed form's json_each took main's lock in the
// wrapper's transaction, whose COMMIT then waited out the busy timeout and failed with
// the driver's raw SQLITE_BUSY). A DELETE of an attached schema's table runs unkeyed.
func TestSelfAttachedDeleteSQLite(t *testing.T) {
	att := "ATTACH DATABASE (SELECT file FROM pragma_database_list WHERE name = 'main') AS aux"
	fencedLikeRaw(t, sqliteBackend(), []rawLikeCase{
		{"attach_self_delete", nil, []string{att, "DELETE FROM aux.accounts WHERE id = 1"}},
	})
}

// TestQuotedCaseTwinOfFenceColumnWrittenPostgres: on PostgreSQL a quoted identifier is
// case-sensitive, so "Version" and "FENCE_TOKEN" are columns of their own, not the
// fencing columns version and fence_token. The caller's assignments to them are kept
// and written as on the raw driver — in a SET list, an INSERT column list and an
// upsert's conflict branch (red-team rt34c F2: the rewriter matched the fencing columns
// ignoring quotes and case and dropped them as "mapped columns replaced", G4; the
// statement succeeded without them).
func TestQuotedCaseTwinOfFenceColumnWrittenPostgres(t *testing.T) {
	add := []string{`ALTER TABLE accounts ADD COLUMN "Version" bigint`, `ALTER TABLE accounts ADD COLUMN "FENCE_TOKEN" bigint`}
	fencedLikeRaw(t, postgresBackend(), []rawLikeCase{
		{"update_Version", add, []string{`UPDATE accounts SET "Version" = 1 WHERE id = 1`}},
		{"update_FENCE_TOKEN", add, []string{`UPDATE accounts SET "FENCE_TOKEN" = 7, balance = 1 WHERE id = 1`}},
		{"upsert_branch_Version", add, []string{`INSERT INTO accounts (id, balance, "Version") VALUES (1, 5, 7) ON CONFLICT (id) DO UPDATE SET "Version" = EXCLUDED."Version"`}},
		{"upsert_branch_FENCE_TOKEN", add, []string{`INSERT INTO accounts (id, balance, "FENCE_TOKEN") VALUES (1, 5, 7) ON CONFLICT (id) DO UPDATE SET "FENCE_TOKEN" = 8`}},
	})
}

// TestFoldedTwinOfCustomTokenColumnWrittenPostgres: the F2 class with custom fencing
// columns. The table's fencing columns are the quoted mixed-case "FenceTok" and "Ver"
// (fencedsql.TokenColumn("FenceTok"), VersionColumn("Ver")); it also has an ordinary
// column fencetok. `SET fencetok = 7` (unquoted, which PostgreSQL folds to fencetok,
// not "FenceTok") is written, in an UPDATE and in an upsert's conflict branch
// (red-team rt34c F2: dropped as an assignment to the token column).
func TestFoldedTwinOfCustomTokenColumnWrittenPostgres(t *testing.T) {
	for _, st := range []string{
		`UPDATE accounts SET fencetok = 7, balance = 0 WHERE id = 1`,
		`INSERT INTO accounts (id, balance) VALUES (1, 5) ON CONFLICT (id) DO UPDATE SET balance = 5, fencetok = 7`,
	} {
		t.Run(st, func(t *testing.T) {
			d := freshDB(t, postgresBackend(), entry{setup: []string{
				"DROP TABLE accounts",
				`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, "FenceTok" BIGINT NOT NULL DEFAULT 0, "Ver" BIGINT NOT NULL DEFAULT 0, fencetok BIGINT)`,
				`INSERT INTO accounts (id, balance, "FenceTok", "Ver") VALUES (1, 100, 50, 3), (2, 200, 50, 3)`,
			}})
			c, err := d.b.connector(d.dsn)
			if err != nil {
				t.Fatal(err)
			}
			db := fencedsql.OpenDB(recConnector{raw: c, rec: &recorder{}}, fencedsql.WithDialect(d.b.dialect),
				fencedsql.Guard("accounts", fencedsql.TokenColumn("FenceTok"), fencedsql.VersionColumn("Ver")))
			defer db.Close()
			if _, err := db.ExecContext(tokenCtx(d.ctx, freshToken), st); err != nil {
				t.Fatalf("fresh token: %v (an ordinary column's write, refused or failed)", err)
			}
			var ft, tok int64
			var got sql.NullInt64
			if err := d.raw.QueryRowContext(d.ctx, `SELECT "FenceTok", fencetok FROM accounts WHERE id = 1`).Scan(&tok, &got); err != nil {
				t.Fatal(err)
			}
			ft = got.Int64
			if !got.Valid || ft != 7 {
				t.Errorf("WRONG RESULT: %s succeeded with token %d (row stamped %d) but the ordinary column fencetok is %v, want 7 (the assignment was dropped as if fencetok were the token column \"FenceTok\")", st, freshToken, tok, got)
			}
		})
	}
}

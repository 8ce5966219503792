// Configuration mistakes on SQLite (red-team rt51f): listing spellings and DSN
// pragmas; each must be refused with a typed error or be safe.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func cfgmTyped(err error) bool {
	var ce *fencedsql.ConfigError
	var se *fencedsql.SchemaError
	return errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrSchema) || errors.Is(err, fencedsql.ErrUnsupported) ||
		errors.Is(err, fencedsql.ErrNoToken) || errors.As(err, &ce) || errors.As(err, &se)
}

// Generator: spellings of the listed name and of the fenced_allow parameter, times
// spellings of the statement's target. Invariant: open fails typed, or every stale
// write (token 5 over a row at 10) is refused typed and leaves the row.
func TestConfigMistakeListedSpellingsSQLite(t *testing.T) {
	listed := []string{"accounts", "ACCOUNTS", `"accounts"`, "main.accounts", `"main"."accounts"`, "[accounts]", "`accounts`",
		" accounts", "accounts ", "accounts,accounts", "accounts,ACCOUNTS", "main.accounts,accounts", "Main.Accounts",
		"accounts,", ",accounts", "accounts,,orders", `"Accounts"`, "temp.accounts", "accounts;", "accounts\t", "\"accounts \"",
		"accounts.", ".accounts", "main..accounts", "x.main.accounts", "accounts , orders"}
	allow := []string{"", "&fenced_allow=ddl", "&fenced_allow=DDL", "&fenced_allow=ddl,dynamic", "&fenced_allow=", "&fenced_allow=none",
		"&fenced_allow=ddl&fenced_allow=dynamic", "&fenced_allow= ddl", "&fenced_allow=dynamic_sql"}
	targets := []string{"accounts", "ACCOUNTS", `"accounts"`, "main.accounts", "[accounts]", "`accounts`", `"main"."accounts"`, "MAIN.Accounts"}
	for _, l := range listed {
		for _, a := range allow {
			p, raw := accountsAt10SQLite(t)
			dsn := "file:" + p + "?fenced_tables=" + url.QueryEscape(l) + a
			db, err := sql.Open("fenced-sqlite", dsn)
			if err != nil {
				if !cfgmTyped(err) {
					t.Errorf("%q: open: untyped %v", dsn, err)
				}
				continue
			}
			for _, tg := range targets {
				_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), "UPDATE "+tg+" SET balance = 99 WHERE id = 1")
				var b, tok int64
				if qerr := raw.QueryRow("SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&b, &tok); qerr != nil {
					t.Fatal(qerr)
				}
				if err == nil || b != 1 || tok != 10 {
					t.Errorf("listed %q allow %q target %s: stale write err=%v balance=%d token=%d", l, a, tg, err, b, tok)
				} else if !cfgmTyped(err) {
					t.Errorf("listed %q allow %q target %s: untyped %v", l, a, tg, err)
				}
			}
			db.Close()
		}
	}
}

// SQLite pragmas given in the DSN (_pragma=…, run by modernc on every connection),
// with the guard, tombstone guard and registry installed: a stale UPDATE and a stale
// re-insert of a deleted key must be refused with a typed error.
func TestConfigMistakeDSNPragmasSQLite(t *testing.T) {
	pragmas := []string{"ignore_check_constraints(1)", "recursive_triggers(1)", "foreign_keys(1)", "legacy_alter_table(1)",
		"trusted_schema(0)", "case_sensitive_like(1)", "reverse_unordered_selects(1)", "count_changes(1)", "defer_foreign_keys(1)",
		"automatic_index(0)", "cell_size_check(1)", "short_column_names(1)", "full_column_names(1)", "empty_result_callbacks(1)",
		"secure_delete(1)", "temp_store(2)", "query_only(0)",
		"busy_timeout(1)", "cache_size(1)", "mmap_size(0)", "analysis_limit(1)", "automatic_index(1)", "legacy_file_format(1)",
		"read_uncommitted(1)", "synchronous(FULL)", "journal_mode(WAL)", "journal_mode(MEMORY)", "journal_mode(TRUNCATE)"}
	for _, pr := range pragmas {
		t.Run(pr, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "t.db")
			raw := testdb.Open(t, "sqlite", "file:"+p)
			testdb.Exec(t, raw, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
				`INSERT INTO accounts (id, balance) VALUES (1, 0)`)
			ctx := context.Background()
			spec := schema.GuardSpec{Table: "accounts"}
			reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				testdb.Exec(t, raw, r.Fix...)
			}
			if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, spec); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("fenced-sqlite", "file:"+p+"?fenced_tables=accounts&_pragma="+pr)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			q := func(tok uint64, s string) error {
				_, err := db.ExecContext(fencedsql.WithToken(ctx, tok), s)
				return err
			}
			if err := q(10, "UPDATE accounts SET balance = 10 WHERE id = 1"); err != nil {
				if !cfgmTyped(err) {
					t.Errorf("newer: untyped %v", err)
				} else {
					t.Logf("newer refused: %.300v", err)
				}
				return
			}
			err = q(5, "UPDATE accounts SET balance = 5 WHERE id = 1")
			var b, tok int64
			raw.QueryRow("SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&b, &tok)
			if err == nil || b != 10 {
				t.Fatalf("stale UPDATE: err=%v balance=%d token=%d", err, b, tok)
			}
			if !cfgmTyped(err) {
				t.Errorf("stale UPDATE: untyped %v", err)
			}
			if err := q(20, "DELETE FROM accounts WHERE id = 1"); err != nil {
				t.Logf("delete refused: %v", err)
				return
			}
			err = q(15, "INSERT INTO accounts (id, balance) VALUES (1, 15)")
			var n int
			raw.QueryRow("SELECT count(*) FROM accounts WHERE id = 1").Scan(&n)
			if err == nil || n != 0 {
				t.Fatalf("stale re-insert: err=%v rows=%d", err, n)
			}
			if !cfgmTyped(err) {
				t.Errorf("stale re-insert: untyped %v", err)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func sqliteDSN(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	return "file:" + (&url.URL{Path: filepath.ToSlash(path)}).EscapedPath() + "?_pragma=busy_timeout(5000)"
}

func execRaw(t *testing.T, driver, dsn string, stmts ...string) {
	t.Helper()
	testdb.Open(t, driver, dsn, stmts...)
}

func wantContains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s lacks %q:\n%s", what, sub, s)
		}
	}
}

func TestSQLite(t *testing.T) {
	dsn := sqliteDSN(t)
	execRaw(t, "sqlite", dsn,
		"CREATE TABLE bare (id INTEGER PRIMARY KEY, amount BIGINT)",
		"CREATE TABLE custom (id INTEGER PRIMARY KEY, tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE nullable (id INTEGER PRIMARY KEY, fence_token BIGINT, version BIGINT NOT NULL DEFAULT 0)",
	)
	args := []string{"-driver", "sqlite", "-dsn", dsn, "-tables", "bare"}

	code, out, errOut := runCmd(t, args...)
	if code != exitProblems || errOut != "" {
		t.Fatalf("check: exit %d, stderr %q", code, errOut)
	}
	wantContains(t, "report", out, "bare: 4 problem(s)", "missing column fence_token", "missing column version",
		"no database-side guard installed", "no tombstone guard installed", "fix:", `CREATE TRIGGER "fencedsql_tombins_bare" AFTER INSERT ON "bare"`, `ALTER TABLE bare ADD COLUMN "fence_token" BIGINT NOT NULL DEFAULT 0;`, `CREATE TRIGGER "fencedsql_guard_bare"`)

	code, out, _ = runCmd(t, append(args, "-print")...)
	if code != exitProblems {
		t.Fatalf("-print: exit %d", code)
	}
	// One transaction, as -apply runs it (the install lock a raise waits for).
	if !strings.HasPrefix(out, "BEGIN;\n-- bare\nALTER TABLE bare ADD COLUMN") || strings.Contains(out, "problem(s)") || !strings.HasSuffix(out, "END;\nCOMMIT;\n") {
		t.Fatalf("-print output:\n%s", out)
	}

	code, out, errOut = runCmd(t, append(args, "-apply")...)
	if code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	wantContains(t, "-apply output", out, "applied 19 statement(s); now:\nbare: OK\n")

	code, out, _ = runCmd(t, args...)
	if code != exitOK || out != "bare: OK\n" {
		t.Fatalf("after apply: exit %d, %q", code, out)
	}

	// Custom column names; a fit table and an unfit one together.
	code, out, _ = runCmd(t, "-driver", "sqlite", "-dsn", dsn, "-tables", "custom", "-token-column", "tok", "-version-column", "ver", "-apply")
	if code != exitOK {
		t.Fatalf("custom -apply: exit %d\n%s", code, out)
	}
	// SQLite cannot make a column NOT NULL: a problem remains after -apply.
	code, out, _ = runCmd(t, "-driver", "sqlite", "-dsn", dsn, "-tables", "bare, nullable", "-apply")
	if code != exitProblems {
		t.Fatalf("nullable -apply: exit %d\n%s", code, out)
	}
	wantContains(t, "nullable -apply", out, "nullable: 1 problem(s)", "rebuild the table", "bare: OK")
	code, out, _ = runCmd(t, "-driver", "sqlite", "-dsn", dsn, "-tables", "nullable", "-print")
	if code != exitProblems || !strings.HasPrefix(out, "-- nullable\n-- column fence_token is nullable") {
		t.Fatalf("nullable -print: exit %d\n%s", code, out)
	}
	// A tombstone trigger dropped while the tombstone table stays: a tombstone guard
	// lost (the lazy check refuses the table), with -tombstones=false too; -apply
	// installs it again.
	execRaw(t, "sqlite", dsn, `DROP TRIGGER "fencedsql_tombins_bare"`)
	if code, out, _ := runCmd(t, append(args, "-tombstones=false")...); code != exitProblems || !strings.Contains(out, "bare: 1 problem(s)\n  - guard lost table fencedsql_tomb_bare") {
		t.Fatalf("-tombstones=false: exit %d, %q", code, out)
	}
	code, out, _ = runCmd(t, args...)
	if code != exitProblems || !strings.Contains(out, "bare: 2 problem(s)\n  - no tombstone guard installed") || !strings.Contains(out, "fencedsql_tombins_bare") {
		t.Fatalf("tombstone trigger dropped: exit %d\n%s", code, out)
	}
	// bare is fixed; nullable, registered above and left out of -tables, is still
	// reported, with a warning (rt40b F1).
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK ||
		!strings.Contains(out, "now:\nbare: OK\n") || !strings.Contains(out, "not in -tables") || !strings.Contains(out, "nullable: 1 problem(s)") || !strings.Contains(errOut, "nullable") {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	// A table without a primary key cannot get tombstones.
	execRaw(t, "sqlite", dsn, "CREATE TABLE nokey (id BIGINT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	code, out, _ = runCmd(t, "-driver", "sqlite", "-dsn", dsn, "-tables", "nokey", "-apply")
	if code != exitProblems || !strings.Contains(out, "nokey: 1 problem(s)\n  - no primary key") {
		t.Fatalf("nokey: exit %d\n%s", code, out)
	}
	// Purging tombstones.
	execRaw(t, "sqlite", dsn, "INSERT INTO bare (id) VALUES (7)", "DELETE FROM bare WHERE id = 7")
	if code, _, errOut := runCmd(t, "-driver", "sqlite", "-dsn", dsn, "-purge-tombstones", "1h"); code != exitUsage || !strings.Contains(errOut, "-tables is required") {
		t.Fatalf("-purge-tombstones without -tables: exit %d, %q", code, errOut)
	}
	if code, out, errOut := runCmd(t, "-driver", "sqlite", "-dsn", dsn, "-tables", "bare", "-purge-tombstones", "1h"); code != exitOK || out != "purged 0 tombstone(s) older than 1h0m0s\n" {
		t.Fatalf("-purge-tombstones 1h: exit %d, %q, %q", code, out, errOut)
	}
	if code, out, errOut := runCmd(t, "-driver", "sqlite", "-dsn", dsn, "-tables", "bare", "-purge-tombstones", "0s"); code != exitOK || out != "purged 1 tombstone(s) older than 0s\n" {
		t.Fatalf("-purge-tombstones 0s: exit %d, %q, %q", code, out, errOut)
	}
	// A missing table.
	code, out, _ = runCmd(t, "-driver", "sqlite", "-dsn", dsn, "-tables", "nosuch")
	if code != exitProblems || !strings.Contains(out, "nosuch: 1 problem(s)\n  - no such table") {
		t.Fatalf("missing table: exit %d\n%s", code, out)
	}
}

func TestUsage(t *testing.T) {
	dsn := sqliteDSN(t)
	for _, args := range [][]string{
		nil,
		{"-driver", "oracle", "-dsn", dsn, "-tables", "t"},
		{"-driver", "sqlite", "-tables", "t"},
		{"-driver", "sqlite", "-dsn", dsn},
		{"-driver", "sqlite", "-dsn", dsn, "-tables", " , "},
		{"-driver", "sqlite", "-dsn", dsn, "-tables", "a;b"},
		{"-driver", "sqlite", "-dsn", dsn, "-tables", "t", "-token-column", "x y"},
		{"-driver", "sqlite", "-dsn", dsn, "-tables", "t", "extra"},
		{"-driver", "sqlite", "-dsn", dsn + "&fenced_tables=t", "-tables", "t"},
		{"-driver", "sqlite", "-dsn", dsn + "&fenced_strict=true", "-tables", "t"},
		{"-driver", "sqlite", "-dsn", dsn + "&fenced_allow=ddl", "-tables", "t"},
		{"-driver", "sqlite", "-dsn", dsn + "&fence_tables=t", "-tables", "t"},
		{"-driver", "sqlite", "-dsn", dsn, "-purge-tombstones", "-1h"},
		{"-driver", "sqlite", "-dsn", dsn, "-purge-tombstones", "1h", "-apply"},
		{"-nosuchflag"},
	} {
		if code, _, errOut := runCmd(t, args...); code != exitUsage || !strings.Contains(errOut, "usage:") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestPasswordNeverPrinted(t *testing.T) {
	const pw = "s3cr3t-Pw"
	for _, c := range []struct{ driver, dsn string }{
		{"postgres", "postgres://app:" + pw + "@127.0.0.1:1/shop?connect_timeout=5"},
		{"postgres", "host=127.0.0.1 port=1 user=app password=" + pw + " dbname=shop connect_timeout=5"},
		{"mysql", "app:" + pw + "@tcp(127.0.0.1:1)/shop?timeout=5s"},
	} {
		code, out, errOut := runCmd(t, "-driver", c.driver, "-dsn", c.dsn, "-tables", "accounts")
		if code != exitProblems || errOut == "" {
			t.Errorf("%s: exit %d, stderr %q", c.driver, code, errOut)
		}
		if strings.Contains(out+errOut, pw) {
			t.Errorf("%s: password printed:\n%s%s", c.driver, out, errOut)
		}
	}
}

// The command against the real servers: a table without fencing columns is made fit
// and guarded, and the guard then refuses a plain UPDATE.
func TestServers(t *testing.T) {
	for _, c := range []struct {
		name, driver, rawDriver string
		dsn                     func(testing.TB) string
		engine                  string
	}{
		{"postgres", "postgres", "pgx", testdb.Postgres, ""},
		{"mariadb", "mysql", "mysql", testdb.MySQL, " ENGINE=InnoDB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := c.dsn(t)
			execRaw(t, c.rawDriver, dsn,
				"CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)"+c.engine,
				"CREATE TABLE nullable (id BIGINT PRIMARY KEY, fence_token BIGINT, version BIGINT NOT NULL DEFAULT 0)"+c.engine,
				"INSERT INTO ledger (id, amount) VALUES (1, 1)",
			)
			args := []string{"-driver", c.driver, "-dsn", dsn, "-tables", "ledger,nullable"}
			code, out, errOut := runCmd(t, append(args, "-print")...)
			if code != exitProblems || errOut != "" {
				t.Fatalf("-print: exit %d, %s", code, errOut)
			}
			if c.driver == "mysql" {
				wantContains(t, "-print", out, "DELIMITER //\nCREATE TRIGGER `fencedsql_guard_ledger`", "END//\nDELIMITER ;\n", "MODIFY COLUMN `fence_token` BIGINT NOT NULL DEFAULT 0;")
			} else {
				wantContains(t, "-print", out, `CREATE OR REPLACE FUNCTION "fencedsql_guard_ledger"()`, `ALTER COLUMN "fence_token" SET NOT NULL;`)
			}
			code, out, errOut = runCmd(t, append(args, "-apply")...)
			if code != exitOK {
				t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
			}
			wantContains(t, "-apply", out, "now:\nledger: OK\nnullable: OK\n")
			if !strings.Contains(out, "no tombstone guard installed") {
				t.Errorf("-apply did not report the missing tombstone guard:\n%s", out)
			}
			if code, _, _ := runCmd(t, args...); code != exitOK {
				t.Fatalf("re-check: exit %d", code)
			}
			db := testdb.Open(t, c.rawDriver, dsn)
			var err error
			if _, err := db.Exec("UPDATE ledger SET amount = 2"); err == nil || !strings.Contains(err.Error(), "fencedsql: guard on") {
				t.Fatalf("plain UPDATE after -apply: %v", err)
			}
			// The tombstone guard: a row deleted under token 5 cannot come back with 0.
			if _, err := db.Exec("UPDATE ledger SET amount = 3, version = version + 1, fence_token = 5 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if c.driver == "postgres" {
				_, err = db.Exec("BEGIN; UPDATE ledger SET version = version + 1 WHERE id = 1; DELETE FROM ledger WHERE id = 1; COMMIT")
			} else {
				_, err = db.Exec("DELETE FROM ledger WHERE id = 1")
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("INSERT INTO ledger (id, amount) VALUES (1, 1)"); err == nil {
				t.Fatal("plain INSERT resurrected a deleted row")
			}
			if code, out, errOut := runCmd(t, "-driver", c.driver, "-dsn", dsn, "-tables", "ledger", "-purge-tombstones", "0s"); code != exitOK || out != "purged 1 tombstone(s) older than 0s\n" {
				t.Fatalf("-purge-tombstones: exit %d, %q, %q", code, out, errOut)
			}
		})
	}
}

// Side doors: reported with their fixes; -print shows the one no statement closes;
// -apply closes the others; notes do not fail the check; the help lists them.
func TestSideDoors(t *testing.T) {
	dsn := sqliteDSN(t)
	execRaw(t, "sqlite", dsn,
		"CREATE TABLE owners (id INTEGER PRIMARY KEY)",
		"CREATE TABLE pets (id INTEGER PRIMARY KEY, owner INT REFERENCES owners (id) ON DELETE CASCADE, x INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE toys (id INTEGER PRIMARY KEY, owner INT REFERENCES owners (id) ON UPDATE SET NULL, x INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE VIEW pets_v AS SELECT * FROM pets",
		"CREATE TRIGGER pets_v_upd INSTEAD OF UPDATE ON pets_v BEGIN UPDATE pets SET x = NEW.x WHERE id = OLD.id; END",
	)
	args := []string{"-driver", "sqlite", "-dsn", dsn, "-tables", "pets,toys"}
	code, out, _ := runCmd(t, append(args, "-print")...)
	if code != exitProblems {
		t.Fatalf("-print: exit %d\n%s", code, out)
	}
	wantContains(t, "-print", out, `DROP TRIGGER IF EXISTS "pets_v_upd";`, "-- not fixed by a statement: cascade (owner) REFERENCES owners (id): ON DELETE CASCADE")
	code, out, _ = runCmd(t, append(args, "-apply")...)
	if code != exitProblems {
		t.Fatalf("-apply: exit %d\n%s", code, out)
	}
	wantContains(t, "-apply", out, "view pets_v (trigger pets_v_upd)", "now:\npets: 1 problem(s)\n  - cascade (owner) REFERENCES owners (id): ON DELETE CASCADE",
		"toys: OK\n  note: cascade (owner) REFERENCES owners (id): ON UPDATE SET NULL")
	if strings.Contains(out[strings.Index(out, "now:"):], "pets_v") {
		t.Errorf("view door left after -apply:\n%s", out)
	}
	if code, out, _ := runCmd(t, "-driver", "sqlite", "-dsn", dsn, "-tables", "toys"); code != exitOK {
		t.Errorf("a table with a note only: exit %d\n%s", code, out)
	}
	_, _, errOut := runCmd(t, "-h")
	wantContains(t, "help", errOut, "engine", "view", "child", "partition", "cascade", "rule", "Notes are printed")
}

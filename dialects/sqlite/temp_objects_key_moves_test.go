package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Attacks a red-team pass made on SQLite that held, kept for the coverage they add:
// TEMP objects created through the pool (a TEMP trigger or INSTEAD OF view writing
// the table, RAISE(IGNORE) on the table or its tombstone table), key moves through
// rowid aliases and upserts followed by a stale re-insert, REPLACE with
// recursive_triggers, WITHOUT ROWID tables, a TEMP table shadowing the floor or the
// table with a forged token.

// heldRow reads row 1 of accounts (balance, token) and whether it exists.
func heldRow(t *testing.T, raw *sql.DB) (bal, tok int64, ok bool) {
	t.Helper()
	err := raw.QueryRow(`SELECT balance, fence_token FROM accounts WHERE id = 1`).Scan(&bal, &tok)
	if err == sql.ErrNoRows {
		return 0, 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return bal, tok, true
}

// heldPool: accounts guarded by the Fix (row 1 at token 60), a fenced pool of ONE
// connection (so session-level TEMP objects stay on the connection the writes use).
func heldPool(t *testing.T, params string) (raw, db *sql.DB) {
	file, raw := ownTriggerDB(t)
	db = testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts"+params)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return raw, db
}

// Through the fenced pool, session-level (TEMP) objects are created on a pool
// connection; the lazy check reads only main's catalog (TEMP triggers "of one
// connection, not seen"), so a TEMP trigger created through the pool itself makes
// every later write on that connection unfenced. Right: the pool refuses (typed)
// CREATE TEMP TRIGGER/VIEW that writes or sits on a guarded table, or the lazy
// check reads sqlite_temp_master of its own connection.
func TestTempObjectsThroughPool(t *testing.T) {
	ctx := context.Background()
	for _, params := range []string{"", "&fenced_allow=ddl"} {
		t.Run(map[string]string{"": "plain", "&fenced_allow=ddl": "ddlpool"}[params], func(t *testing.T) {
			t.Run("temp trigger on another temp table updates accounts", func(t *testing.T) {
				raw, db := heldPool(t, params)
				_, err1 := db.ExecContext(ctx, `CREATE TEMP TABLE h_x (a INTEGER)`)
				_, err2 := db.ExecContext(ctx, `CREATE TEMP TRIGGER h_xt AFTER INSERT ON h_x BEGIN UPDATE accounts SET balance = -1, version = version + 1 WHERE id = 1; END`)
				_, err3 := db.ExecContext(fencedsql.WithToken(ctx, 10), `INSERT INTO h_x VALUES (1)`)
				t.Logf("errs: %v | %v | %v", err1, err2, err3)
				if bal, tok, _ := heldRow(t, raw); bal == -1 {
					t.Fatalf("[fail-open] through the fenced pool: CREATE TEMP TABLE (%v), CREATE TEMP TRIGGER writing accounts (%v), INSERT under token 10 (%v): row 1 written under token 60 now balance %d token %d; want the TEMP trigger refused (typed) or the write refused", err1, err2, err3, bal, tok)
				}
			})
			t.Run("temp view instead-of delete", func(t *testing.T) {
				raw, db := heldPool(t, params)
				_, err1 := db.ExecContext(ctx, `CREATE TEMP VIEW h_v AS SELECT * FROM accounts`)
				_, err2 := db.ExecContext(ctx, `CREATE TEMP TRIGGER h_vt INSTEAD OF DELETE ON h_v BEGIN DELETE FROM accounts WHERE id = OLD.id; END`)
				_, err3 := db.ExecContext(fencedsql.WithToken(ctx, 10), `DELETE FROM h_v WHERE id = 1`)
				t.Logf("errs: %v | %v | %v", err1, err2, err3)
				if bal, tok, ok := heldRow(t, raw); !ok {
					t.Fatalf("[fail-open] through the fenced pool: CREATE TEMP VIEW (%v), INSTEAD OF DELETE trigger (%v), DELETE through the view under token 10 (%v): row 1 written under token 60 deleted (was %d/%d); want refused", err1, err2, err3, bal, tok)
				}
			})
			t.Run("temp trigger raise ignore skips tombstone", func(t *testing.T) {
				raw, db := heldPool(t, params)
				_, err1 := db.ExecContext(ctx, `CREATE TEMP TRIGGER h_ig AFTER DELETE ON main.accounts BEGIN SELECT RAISE(IGNORE); END`)
				_, err2 := db.ExecContext(fencedsql.WithToken(ctx, 70), `DELETE FROM accounts WHERE id = 1`)
				_, err3 := db.ExecContext(fencedsql.WithToken(ctx, 65), `INSERT INTO accounts (id, balance) VALUES (1, -1)`)
				if bal, tok, ok := heldRow(t, raw); ok && bal == -1 {
					t.Fatalf("[fail-open] resurrection: TEMP trigger RAISE(IGNORE) created through the pool (%v); DELETE under 70 (%v); INSERT under 65 (%v) brought key 1 back (balance %d token %d); want the TEMP trigger refused or the INSERT refused with ErrFenced", err1, err2, err3, bal, tok)
				}
			})
			t.Run("temp trigger on tombstone table", func(t *testing.T) {
				raw, db := heldPool(t, params)
				var tomb string
				if err := raw.QueryRow(`SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'fencedsql_tomb%accounts%'`).Scan(&tomb); err != nil {
					t.Fatal(err)
				}
				_, err1 := db.ExecContext(ctx, `CREATE TEMP TRIGGER h_tt BEFORE INSERT ON main.`+tomb+` BEGIN SELECT RAISE(IGNORE); END`)
				_, err2 := db.ExecContext(fencedsql.WithToken(ctx, 70), `DELETE FROM accounts WHERE id = 1`)
				_, err3 := db.ExecContext(fencedsql.WithToken(ctx, 65), `INSERT INTO accounts (id, balance) VALUES (1, -1)`)
				if bal, tok, ok := heldRow(t, raw); ok && bal == -1 {
					t.Fatalf("[fail-open] resurrection: TEMP trigger on %s created through the pool (%v); DELETE under 70 (%v); INSERT under 65 (%v) brought key 1 back (balance %d token %d)", tomb, err1, err2, err3, bal, tok)
				}
			})
		})
	}
}

// Raw-connection key moves and upserts that the tombstone guard must see.
func TestKeyMovesThenStaleReinsert(t *testing.T) {
	ctx := context.Background()
	moves := []string{
		`UPDATE accounts SET _rowid_ = 50, fence_token = 70, version = version + 1 WHERE id = 1`,
		`UPDATE accounts SET oid = 50, fence_token = 70, version = version + 1 WHERE id = 1`,
		`INSERT INTO accounts (id, fence_token, version) VALUES (1, 70, 9) ON CONFLICT (id) DO UPDATE SET id = 50, fence_token = 70, version = version + 1`,
		`INSERT INTO accounts (id, fence_token, version) VALUES (1, 70, 9) ON CONFLICT DO UPDATE SET rowid = 50, fence_token = 70, version = version + 1`,
	}
	for _, q := range moves {
		t.Run(q, func(t *testing.T) {
			_, raw := ownTriggerDB(t)
			if _, err := raw.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			_, err := raw.ExecContext(ctx, `INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, -1, 65, 1)`)
			if _, _, ok := heldRow(t, raw); ok {
				t.Fatalf("[fail-open] key 1 moved away under token 70 by %q; raw INSERT of key 1 under 65 accepted (%v)", q, err)
			}
		})
	}
	// through the wrapper
	for _, q := range []string{
		`UPDATE accounts SET _rowid_ = 50 WHERE id = 1`,
		`UPDATE accounts SET oid = 50 WHERE id = 1`,
		`INSERT INTO accounts (id, balance) VALUES (1, 5) ON CONFLICT (id) DO UPDATE SET id = 50`,
		`INSERT INTO accounts (id, balance) VALUES (1, 5) ON CONFLICT (id) DO UPDATE SET _rowid_ = 50`,
	} {
		t.Run("pool "+q, func(t *testing.T) {
			raw, db := heldPool(t, "")
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), q); err != nil {
				t.Logf("%s: %v", q, err)
				return
			}
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 65), `INSERT INTO accounts (id, balance) VALUES (1, -1)`)
			if _, _, ok := heldRow(t, raw); ok {
				t.Fatalf("[fail-open] key 1 moved away under token 70 by %q through the pool; INSERT of key 1 under 65 accepted (%v)", q, err)
			}
			var tok int64
			raw.QueryRow(`SELECT fence_token FROM accounts WHERE id = 50`).Scan(&tok)
			if tok != 70 {
				t.Fatalf("moved row has token %d, want 70", tok)
			}
		})
	}
}

// A raw connection with recursive_triggers on (DSN _pragma): REPLACE fires the
// delete triggers too; the stale REPLACEs must still be refused.
func TestReplaceRecursiveTriggers(t *testing.T) {
	ctx := context.Background()
	for _, q := range []string{
		"INSERT OR REPLACE INTO accounts (id, balance, fence_token, version) VALUES (1, -1, 5, 9)",
		"UPDATE OR REPLACE accounts SET id = 1, balance = -1, version = version + 1 WHERE id = 3",
	} {
		t.Run(q, func(t *testing.T) {
			raw := tombGuardedAt(t, testdb.SQLite(t)+"&_pragma=recursive_triggers(1)", "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
			testdb.Exec(t, raw, "INSERT INTO accounts (id, fence_token, version) VALUES (1, 20, 1), (2, 20, 1), (3, 5, 1)")
			_, err := raw.ExecContext(ctx, q)
			var n int
			raw.QueryRow("SELECT count(*) FROM accounts WHERE balance = -1 OR (id = 1 AND fence_token <> 20)").Scan(&n)
			if n != 0 {
				t.Fatalf("[fail-open] recursive_triggers on: %s accepted (%v), row 1 (token 20) replaced", q, err)
			}
		})
	}
}

// WITHOUT ROWID tables (text and composite keys) under the tombstone guard: a stale
// raw REPLACE over a newer row must be refused, and a stale re-insert of a deleted key.
func TestWithoutRowidReplace(t *testing.T) {
	ctx := context.Background()
	for _, ddl := range []string{
		"CREATE TABLE accounts (id TEXT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) WITHOUT ROWID",
		"CREATE TABLE accounts (id TEXT PRIMARY KEY COLLATE NOCASE, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) WITHOUT ROWID",
		"CREATE TABLE accounts (id TEXT, k INT, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id, k)) WITHOUT ROWID",
	} {
		t.Run(ddl[len(ddl)-40:], func(t *testing.T) {
			raw := testdb.Open(t, "sqlite", testdb.SQLite(t), ddl)
			raw.SetMaxOpenConns(1)
			reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				t.Fatal(err)
			}
			testdb.Exec(t, raw, reps[0].Fix...)
			if reps, _ = schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"}); !reps[0].OK() {
				t.Logf("not OK (held): %q", reps[0].Problems)
				return
			}
			comp := strings.Contains(ddl, "k INT")
			ins := func(id string, bal, tok int) string {
				if comp {
					return fmt.Sprintf("(id, k, balance, fence_token, version) VALUES ('%s', 1, %d, %d, 1)", id, bal, tok)
				}
				return fmt.Sprintf("(id, balance, fence_token, version) VALUES ('%s', %d, %d, 1)", id, bal, tok)
			}
			testdb.Exec(t, raw, "INSERT INTO accounts "+ins("a", 600, 60))
			for _, q := range []string{"INSERT OR REPLACE INTO accounts " + ins("a", -1, 5), "REPLACE INTO accounts " + ins("A", -1, 5)} {
				_, err := raw.ExecContext(ctx, q)
				var n int
				raw.QueryRow("SELECT count(*) FROM accounts WHERE id = 'a' AND balance = -1").Scan(&n)
				if n != 0 {
					t.Fatalf("[fail-open] WITHOUT ROWID: stale %s over a row at 60 accepted (%v)", q, err)
				}
			}
			testdb.Exec(t, raw, "UPDATE accounts SET fence_token = 70, version = version + 1", "DELETE FROM accounts")
			for _, id := range []string{"a", "A"} {
				_, err := raw.ExecContext(ctx, "INSERT INTO accounts "+ins(id, -1, 65))
				var n int
				raw.QueryRow("SELECT count(*) FROM accounts").Scan(&n)
				if n != 0 && (id == "a" || strings.Contains(ddl, "NOCASE")) {
					t.Fatalf("[fail-open] WITHOUT ROWID: key deleted under 70 re-inserted as %q under 65 (%v)", id, err)
				}
				testdb.Exec(t, raw, "DELETE FROM accounts WHERE fence_token = 65")
			}
		})
	}
}

// A TEMP table named like the floor table on the connection RaiseTokenFloor uses: the
// raise must reach main's floor (or fail typed), never land in the TEMP shadow.
func TestFloorRaiseTempShadow(t *testing.T) {
	ctx := context.Background()
	_, raw := ownTriggerDB(t)
	raw.SetMaxOpenConns(1)
	testdb.Exec(t, raw, "CREATE TEMP TABLE fencedsql_floor (id INTEGER PRIMARY KEY, floor INTEGER NOT NULL)")
	err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 100)
	var mainFloor, tempFloor int64
	raw.QueryRow("SELECT coalesce((SELECT floor FROM main.fencedsql_floor WHERE id = 1), -1)").Scan(&mainFloor)
	raw.QueryRow("SELECT coalesce((SELECT floor FROM temp.fencedsql_floor WHERE id = 1), -1)").Scan(&tempFloor)
	if err == nil && mainFloor < 100 {
		_, werr := raw.ExecContext(ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (9, -1, 50, 1)")
		t.Fatalf("[fail-open] RaiseTokenFloor(100) returned nil with a TEMP fencedsql_floor on its connection: main floor %d, temp floor %d; INSERT under token 50 afterwards: %v", mainFloor, tempFloor, werr)
	}
	t.Logf("err %v main %d temp %d", err, mainFloor, tempFloor)
}

// An upsert through the pool whose conflict target is another UNIQUE column and whose
// DO UPDATE moves the key: the old key must stay deleted for older tokens.
func TestUpsertMovesKeyOnOtherTarget(t *testing.T) {
	ctx := context.Background()
	file := "file:" + filepath.ToSlash(filepath.Join(t.TempDir(), "u.db")) + "?_pragma=busy_timeout(5000)"
	raw := testdb.Open(t, "sqlite", file, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, mail TEXT UNIQUE, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, mail, fence_token, version) VALUES (1, 600, 'a@x', 60, 1)")
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	for i, q := range []string{
		"INSERT INTO accounts (id, balance, mail) VALUES (5, 1, 'a@x') ON CONFLICT (mail) DO UPDATE SET id = excluded.id",
		"INSERT INTO accounts (id, balance, mail) VALUES (6, 1, 'a@x') ON CONFLICT (mail) DO UPDATE SET _rowid_ = excluded.id",
	} {
		_, err := db.ExecContext(fencedsql.WithToken(ctx, uint64(70+i)), q)
		t.Logf("%s: %v", q, err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO accounts (id, balance, mail) VALUES (1, -1, 'z')")
	var n int
	raw.QueryRow("SELECT count(*) FROM accounts WHERE id = 1").Scan(&n)
	if n != 0 {
		t.Fatalf("[fail-open] key 1 moved away under 70 by an upsert on mail; INSERT of key 1 under 65: %v", err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO accounts (id, balance, mail) VALUES (5, -1, 'y')")
	raw.QueryRow("SELECT count(*) FROM accounts WHERE id = 5").Scan(&n)
	if n != 0 {
		t.Fatalf("[fail-open] key 5 moved away under 71; INSERT of key 5 under 65: %v", err)
	}
}

// A TEMP table shadowing the guarded name through the pool, used as the source of an
// INSERT … SELECT into main.accounts that carries a forged fence_token.
func TestTempShadowForgedToken(t *testing.T) {
	ctx := context.Background()
	raw, db := heldPool(t, "")
	_, e1 := db.ExecContext(ctx, "CREATE TEMP TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT, fence_token BIGINT, version BIGINT)")
	_, e2 := db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO temp.accounts VALUES (11, 7, 999, 1)")
	_, e3 := db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO main.accounts SELECT * FROM temp.accounts")
	_, e4 := db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO main.accounts SELECT id + 1, balance, fence_token, version FROM temp.accounts")
	_, e5 := db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO accounts (id, balance, fence_token, version) SELECT 13, 7, 999, 1")
	_, e6 := db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO accounts (id, balance, fence_token, version) VALUES (14, 7, 999, 1) RETURNING id")
	_, e7 := db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO accounts (id, balance) VALUES (15, 7) ON CONFLICT (id) DO UPDATE SET fence_token = 999")
	_, e8 := db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO accounts (id, balance) VALUES (15, 7) ON CONFLICT (id) DO UPDATE SET fence_token = 999, balance = 8")
	t.Logf("%v | %v | %v | %v | %v | %v | %v | %v", e1, e2, e3, e4, e5, e6, e7, e8)
	rows, _ := raw.Query("SELECT id, fence_token FROM main.accounts WHERE id > 1")
	defer rows.Close()
	for rows.Next() {
		var id, tok int64
		rows.Scan(&id, &tok)
		if tok != 65 {
			t.Errorf("[fail-open] row %d written under lease 65 carries token %d", id, tok)
		}
	}
}

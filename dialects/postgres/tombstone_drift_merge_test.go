package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// G9 against what a plain connection does after the install (a red-team pass, all
// held): the primary key moved to another column or swapped for a unique index (the
// tombstone key no longer matches: reported, the pool refuses), and PostgreSQL 15's
// MERGE and COPY re-inserting a deleted key, alone or racing the fenced DELETE in
// each isolation level (refused by the tombstone, or a serialization failure).

// tombKeyDrift installs acc's guards (schema.Check's Fix) over create, runs the
// migration statements migrate on a plain connection, then opens a fenced pool and
// runs the holder's statements: ins under 10, del under 50, stale under 20. Want:
// schema.Check reports a problem after the migration, or the stale statement is
// refused with a typed error and the key stays deleted.
func tombKeyDrift(t *testing.T, create []string, migrate []string, ins, del, stale, count string) {
	t.Helper()
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw := rawWith(t, dsn, create...)
	checkAcc(t, raw, dsn)
	if probs, _ := accReport(t, raw); len(probs) != 0 {
		t.Fatalf("after the install: %q", probs)
	}
	rawWith(t, dsn, migrate...)
	probs, _ := accReport(t, raw)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), ins); err != nil {
		t.Logf("insert under 10: %v (schema problems %q)", err, probs)
		if len(probs) != 0 {
			return
		}
		t.Fatalf("insert under 10 refused though schema.Check is OK: %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), del); err != nil {
		if len(probs) != 0 {
			return
		}
		t.Fatalf("delete under 50 refused though schema.Check is OK: %v", err)
	}
	_, serr := db.ExecContext(fencedsql.WithToken(ctx, 20), stale)
	var n int
	if err := raw.QueryRow(count).Scan(&n); err != nil {
		t.Fatal(err)
	}
	t.Logf("problems after migration: %q; stale: %v; rows: %d", probs, serr, n)
	if n != 0 && len(probs) == 0 {
		t.Fatalf("FAIL-OPEN: key deleted under 50 came back under 20 (%s), and schema.Check reports nothing", stale)
	}
	if serr != nil && !errors.Is(serr, fencedsql.ErrFenced) && !errors.Is(serr, fencedsql.ErrSchema) {
		t.Fatalf("wrong error: %v", serr)
	}
}

func TestTombstonePrimaryKeyMovedToOtherColumn(t *testing.T) {
	tombKeyDrift(t,
		[]string{"CREATE TABLE acc (id bigint PRIMARY KEY, code text NOT NULL, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)"},
		[]string{"ALTER TABLE acc DROP CONSTRAINT acc_pkey", "ALTER TABLE acc ADD PRIMARY KEY (code)"},
		"INSERT INTO acc (id, code) VALUES (1, 'x')",
		"DELETE FROM acc WHERE code = 'x'",
		"INSERT INTO acc (id, code) VALUES (2, 'x')",
		"SELECT count(*) FROM acc WHERE code = 'x'")
}

func TestTombstonePrimaryKeyReplacedByUniqueIndexSwap(t *testing.T) {
	// The pk constraint swapped to another index over another column via USING INDEX.
	tombKeyDrift(t,
		[]string{"CREATE TABLE acc (id bigint PRIMARY KEY, code text NOT NULL, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)"},
		[]string{"CREATE UNIQUE INDEX acc_code ON acc (code)", "ALTER TABLE acc DROP CONSTRAINT acc_pkey", "ALTER TABLE acc ADD CONSTRAINT acc_pkey PRIMARY KEY USING INDEX acc_code"},
		"INSERT INTO acc (id, code) VALUES (1, 'x')",
		"DELETE FROM acc WHERE code = 'x'",
		"INSERT INTO acc (id, code) VALUES (2, 'x')",
		"SELECT count(*) FROM acc WHERE code = 'x'")
}

// mergeAcc creates acc with its guards installed and key 1 inserted under token 10; it
// returns a plain connection and a fenced pool.
func mergeAcc(t *testing.T) (raw, db *sql.DB) {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw = rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	checkAcc(t, raw, dsn)
	db = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if err := insertAs(db, 10, "INSERT INTO acc (id) VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	return raw, db
}

// TestTombstoneMergeStaleReinsertRawPool: a PG15 MERGE from a plain pool re-inserting a
// key deleted under 50 with fence_token 20 fires the tombstone's AFTER INSERT trigger.
func TestTombstoneMergeStaleReinsertRawPool(t *testing.T) {
	ctx := context.Background()
	raw, db := mergeAcc(t)
	if err := insertAs(db, 50, "DELETE FROM acc WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"MERGE INTO acc a USING (VALUES (1::bigint)) v(id) ON a.id = v.id WHEN NOT MATCHED THEN INSERT (id, fence_token) VALUES (v.id, 20)",
		"MERGE INTO acc a USING (SELECT 1::bigint AS id) v ON false WHEN NOT MATCHED THEN INSERT VALUES (v.id, 0, 20, 0)",
		"COPY acc (id, fence_token) FROM PROGRAM 'echo 1,20' WITH (FORMAT csv)",
	} {
		_, err := raw.ExecContext(ctx, q)
		if err == nil || !strings.Contains(err.Error(), "tombstone") {
			t.Errorf("%s: %v, want the tombstone's refusal", q, err)
		}
	}
	var n int
	if err := raw.QueryRow("SELECT count(*) FROM acc").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows %d, %v: want 0", n, err)
	}
}

// TestTombstoneMergeRacesDelete: a plain pool's MERGE (WHEN MATCHED UPDATE / WHEN NOT
// MATCHED INSERT under token 20) waits on a fenced DELETE of the key under 50 and runs
// after it commits, at each isolation level: the key must stay deleted.
func TestTombstoneMergeRacesDelete(t *testing.T) {
	for _, iso := range []string{"READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"} {
		t.Run(iso, func(t *testing.T) {
			ctx := context.Background()
			raw, db := mergeAcc(t)
			tx, err := db.BeginTx(fencedsql.WithToken(ctx, 50), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM acc WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				conn, err := raw.Conn(ctx)
				if err != nil {
					done <- err
					return
				}
				defer conn.Close()
				rtx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: map[string]sql.IsolationLevel{"READ COMMITTED": sql.LevelReadCommitted, "REPEATABLE READ": sql.LevelRepeatableRead, "SERIALIZABLE": sql.LevelSerializable}[iso]})
				if err != nil {
					done <- err
					return
				}
				_, err = rtx.ExecContext(ctx, "MERGE INTO acc a USING (VALUES (1::bigint)) v(id) ON a.id = v.id WHEN MATCHED THEN UPDATE SET balance = 7 WHEN NOT MATCHED THEN INSERT (id, balance, fence_token) VALUES (v.id, 7, 20)")
				if err != nil {
					rtx.Rollback()
					done <- err
					return
				}
				done <- rtx.Commit()
			}()
			var waiting int
			for i := 0; i < 200 && waiting == 0; i++ {
				raw.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(&waiting)
				time.Sleep(25 * time.Millisecond)
			}
			if waiting == 0 {
				t.Fatal("the MERGE never waited on the DELETE")
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			merr := <-done
			var n int
			if err := raw.QueryRow("SELECT count(*) FROM acc").Scan(&n); err != nil {
				t.Fatal(err)
			}
			t.Logf("waited=%d merge: %v rows %d", waiting, merr, n)
			if n != 0 {
				t.Fatalf("key deleted under 50 is back after a racing MERGE under 20")
			}
		})
	}
}

var _ = strings.Contains

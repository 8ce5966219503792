package postgres_test

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt46a F1: a unique index of the guards' own tables besides their key —
// above all one on the tombstone table's key under a case-insensitive collation,
// which is an arbiter of the tombstone function's INSERT … ON CONFLICT (id) and folds
// the tombstone of 'ALICE' into the row of 'alice' — is a guard-table door
// (guardTableIndexes): schema.Check reports it with a Fix that drops it, and the lazy
// check refuses the table until then.

// textAccGuarded creates acc with a text key, guarded with tombstones by schema.Check's
// Fix, after the statements pre.
func textAccGuarded(t *testing.T, pre ...string) (*sql.DB, string) {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, append(pre, "CREATE TABLE acc (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")...)
	checkAcc(t, raw, dsn)
	if probs, _ := accReport(t, raw); len(probs) != 0 {
		t.Fatalf("after the install: %q", probs)
	}
	return raw, dsn
}

// requireUniqueIndexDoor checks that schema.Check reports a unique index besides the
// key of the guard table named in, that a pool refuses a DELETE of acc with ErrSchema,
// and that the Fix clears the report.
func requireUniqueIndexDoor(t *testing.T, raw *sql.DB, dsn, in string) {
	t.Helper()
	probs, fix := accReport(t, raw)
	if p := strings.Join(probs, "\n"); !strings.Contains(p, in+" ") || !strings.Contains(p, "has a unique index besides its key") {
		t.Fatalf("schema.Check problems %q: want a unique index besides the key of %s", probs, in)
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if err := insertAs(db, 10, "DELETE FROM acc WHERE id = 'nobody'"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("a DELETE through the pool: %v, want ErrSchema", err)
	}
	rawWith(t, dsn, fix...)
	if probs, _ := accReport(t, raw); len(probs) != 0 {
		t.Fatalf("after the Fix %q: %q", fix, probs)
	}
}

// foldByCaseInsensitiveIndex deletes 'alice' then 'ALICE' under token 10 and inserts
// 'ALICE' under token 5: want ErrFenced or ErrSchema, and no row.
func foldByCaseInsensitiveIndex(t *testing.T, raw *sql.DB, dsn string) error {
	t.Helper()
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	for _, q := range []string{"DELETE FROM acc WHERE id = 'alice'", "DELETE FROM acc WHERE id = 'ALICE'"} {
		if err := insertAs(db, 10, q); err != nil {
			return err
		}
	}
	err := insertAs(db, 5, "INSERT INTO acc (id, balance) VALUES ('ALICE', 666)")
	var n int
	if qerr := raw.QueryRow("SELECT count(*) FROM acc WHERE id = 'ALICE'").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if err == nil || n != 0 {
		t.Fatalf("a stale (token 5) INSERT of 'ALICE', deleted under token 10, landed (err %v, rows %d)", err, n)
	}
	return err
}

func TestTombstoneTableCaseInsensitiveUniqueIndexRefused(t *testing.T) {
	for name, v := range map[string]struct{ pre, index string }{
		"secondary strength": {"CREATE COLLATION fold_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
			"CREATE UNIQUE INDEX tomb_ci ON fencedsql_tomb_acc (id COLLATE fold_ci)"},
		"primary strength, named like the key": {"CREATE COLLATION fold_ci (provider = icu, locale = 'und-u-ks-level1', deterministic = false)",
			"CREATE UNIQUE INDEX fencedsql_tomb_acc_id_ci ON fencedsql_tomb_acc (id COLLATE fold_ci)"},
	} {
		t.Run(name, func(t *testing.T) {
			raw, dsn := textAccGuarded(t, v.pre)
			rawWith(t, dsn, "INSERT INTO acc (id, fence_token) VALUES ('alice', 3), ('ALICE', 3)", v.index)
			if err := foldByCaseInsensitiveIndex(t, raw, dsn); !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("with the index: %v, want ErrSchema (the lazy check refuses the table)", err)
			}
			requireUniqueIndexDoor(t, raw, dsn, "the tombstone table")
			if err := foldByCaseInsensitiveIndex(t, raw, dsn); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("after the Fix: %v, want ErrFenced", err)
			}
		})
	}
}

// The absence recorder's form: the same index folds the recorder's tombstone of a key
// claimed absent ('ALICE') into the row of 'alice', deleted earlier.
func TestClaimOfAbsentKeyRefusedWithCaseInsensitiveTombstoneIndex(t *testing.T) {
	raw, dsn := textAccGuarded(t, "CREATE COLLATION fold_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
	rawWith(t, dsn, "INSERT INTO acc (id, fence_token) VALUES ('alice', 3)",
		"CREATE UNIQUE INDEX tomb_ci ON fencedsql_tomb_acc (id COLLATE fold_ci)")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if err := insertAs(db, 3, "DELETE FROM acc WHERE id = 'alice'"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("with the index: %v, want ErrSchema", err)
	}
	requireUniqueIndexDoor(t, raw, dsn, "the tombstone table")
	db = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if err := insertAs(db, 3, "DELETE FROM acc WHERE id = 'alice'"); err != nil {
		t.Fatal(err)
	}
	claimAbsent(t, db, 10, true, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", "ALICE")
	if err := insertAs(db, 5, "INSERT INTO acc (id, balance) VALUES ('ALICE', 666)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("a stale (token 5) INSERT of 'ALICE', claimed absent under token 10: %v, want ErrFenced", err)
	}
}

// The other unique indexes and constraints of the guard tables are not arbiters of
// the guards' ON CONFLICT (they make its writes fail) but are reported alike: the
// guards create none.
func TestGuardTableOtherUniqueIndexesReported(t *testing.T) {
	for name, v := range map[string]struct{ index, in string }{
		"unique constraint on fence_token": {"ALTER TABLE fencedsql_tomb_acc ADD CONSTRAINT tomb_tok UNIQUE (fence_token)", "the tombstone table"},
		"exclusion constraint":             {"ALTER TABLE fencedsql_tomb_acc ADD CONSTRAINT tomb_x EXCLUDE USING btree (fence_token WITH =)", "the tombstone table"},
		"partial unique index":             {"CREATE UNIQUE INDEX tomb_part ON fencedsql_tomb_acc (id) WHERE fence_token > 0", "the tombstone table"},
		"expression unique index":          {"CREATE UNIQUE INDEX tomb_lower ON fencedsql_tomb_acc (pg_catalog.lower(id))", "the tombstone table"},
		"unique index on the floor":        {"CREATE UNIQUE INDEX floor_floor ON fencedsql_floor (floor)", "the token floor"},
	} {
		t.Run(name, func(t *testing.T) {
			raw, dsn := textAccGuarded(t)
			rawWith(t, dsn, v.index)
			requireUniqueIndexDoor(t, raw, dsn, v.in)
		})
	}
}

package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestAbsentClaimOverlongValueUnderNondeterministicCollation: under a nondeterministic
// ICU collation 'abcd' || U+200B equals 'abcd', so a claim of that value pins key
// 'abcd'; the recorder's INSERT of the five-character value into the varchar(4)
// tombstone column raises string_data_right_truncation, which the recorder (v3) turned
// into "record nothing": the claim answered absent, and an older holder's INSERT of
// 'abcd' landed (red-team rt45a F2). The recorder (v4) refuses it: ErrUnsupported.
func TestAbsentClaimOverlongValueUnderNondeterministicCollation(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE COLLATION ovl_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
		"CREATE TABLE k (name varchar(4) COLLATE ovl_ci PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	checkTable(t, raw, dsn, "k")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=k")
	var eq bool
	if err := raw.QueryRow("SELECT $1::text COLLATE ovl_ci = 'abcd'", "abcd\u200b").Scan(&eq); err != nil || !eq {
		t.Skipf("collation does not make them equal: %v %v", eq, err)
	}
	ctx := fencedsql.WithToken(context.Background(), 70)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	claimErr := tx.QueryRowContext(ctx, "SELECT name FROM k WHERE name = $1 FOR UPDATE", "abcd\u200b").Scan(&got)
	commitErr := tx.Commit()
	_, insErr := raw.Exec("INSERT INTO k (name, fence_token) VALUES ('abcd', 60)")
	if errors.Is(claimErr, sql.ErrNoRows) && commitErr == nil && insErr == nil {
		t.Fatalf("claim of 'abcd'+U+200B (= 'abcd' under the collation) under 70 answered absent and committed; a plain INSERT of 'abcd' under 60 then landed")
	}
	if !errors.Is(claimErr, fencedsql.ErrUnsupported) {
		t.Fatalf("claim of 'abcd'+U+200B: %v, want ErrUnsupported", claimErr)
	}
	t.Logf("claim %v commit %v insert %v", claimErr, commitErr, insErr)
}

// TestAbsenceImpostorWithSwappedKeyList: ownAbsence parsed the key list (and the
// lookup) out of the body; a recorder whose INSERT and ON CONFLICT name the key columns
// in the other order ("b", "a" for PRIMARY KEY (a, b)) rebuilt the same text and passed
// as the guard's own: the claim of (1, 2) recorded the tombstone of (2, 1) (red-team
// rt45a F3). The expected text is built from the catalog's key: schema.Check reports
// it, and the claim through the pool records nothing through it.
func TestAbsenceImpostorWithSwappedKeyList(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE TABLE ab (a int NOT NULL, b int NOT NULL, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0, PRIMARY KEY (a, b))")
	checkTable(t, raw, dsn, "ab")
	var def string
	if err := raw.QueryRow("SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.proname = 'fencedsql_tombclaim_ab' AND p.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())").Scan(&def); err != nil {
		t.Fatal(err)
	}
	if strings.Count(def, `("a", "b"`) != 4 {
		t.Fatalf("unexpected recorder text (%d lists):\n%s", strings.Count(def, `("a", "b"`), def)
	}
	def = strings.ReplaceAll(def, `("a", "b"`, `("b", "a"`)
	if _, err := raw.Exec(def); err != nil {
		t.Fatal(err)
	}
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "ab"})
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, r := range reps {
		problems = append(problems, r.Problems...)
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=ab")
	ctx := fencedsql.WithToken(context.Background(), 70)
	if tx, err := db.BeginTx(ctx, nil); err == nil {
		var a int
		claimErr := tx.QueryRowContext(ctx, "SELECT a FROM ab WHERE a = $1 AND b = $2 FOR UPDATE", 1, 2).Scan(&a)
		commitErr := tx.Commit()
		t.Logf("claim through the impostor: %v, commit %v", claimErr, commitErr)
	}
	_, insErr := raw.Exec("INSERT INTO ab (a, b, fence_token) VALUES (1, 2, 60)")
	if len(problems) == 0 {
		var t21, t12 sql.NullInt64
		raw.QueryRow("SELECT fence_token FROM fencedsql_tomb_ab WHERE a = 2 AND b = 1").Scan(&t21)
		raw.QueryRow("SELECT fence_token FROM fencedsql_tomb_ab WHERE a = 1 AND b = 2").Scan(&t12)
		t.Fatalf("recorder with the key list swapped: schema.Check reports nothing; after the claim of (1, 2) under 70 the tombstone of (2, 1) is %v, of (1, 2) %v; plain INSERT of (1, 2) under 60: %v", t21, t12, insErr)
	}
}

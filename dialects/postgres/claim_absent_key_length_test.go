package postgres_test

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt45b F6: the typed recorder call (AbsenceCall) casts each key value to its column's type
// with the modifier removed (baseType): "character(3)" became "character", which in a
// cast is character(1), and "bit(3)" "bit", bit(1): a claim of the absent key 'abc'
// recorded the key 'a' (B'101' failed with 22026), and an older holder's INSERT of
// 'abc' landed after the claim. Now cast to bpchar and "bit", which keep the length.
func TestAbsentClaimKeepsTheKeysLength(t *testing.T) {
	for _, c := range []struct{ typ, val, lit string }{
		{"character(3)", "abc", "'abc'"},
		{"bit(3)", "101", "B'101'"},
	} {
		t.Run(c.typ, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			raw := rawWith(t, dsn, "CREATE TABLE acc (id "+c.typ+" PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
			checkAcc(t, raw, dsn)
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
			claimAbsent(t, db, 60, true, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", c.val)
			var recorded string
			_ = raw.QueryRow("SELECT string_agg(id::text || '@' || fence_token, ',') FROM fencedsql_tomb_acc").Scan(&recorded)
			err := insertAs(db, 40, "INSERT INTO acc (id) VALUES ("+c.lit+")")
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("claim of %s absent under 60 recorded tombstones %q; INSERT of %s under 40 after it: %v, want ErrFenced", c.lit, recorded, c.lit, err)
			}
		})
	}
}

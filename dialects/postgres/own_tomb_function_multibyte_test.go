package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestOwnTombstoneFunctionMultibyteName: one table name in two schemas, tombstone-
// guarded in each, whose own tombstone function name is hashed and whose first 40
// characters take more than the 46 bytes its name is cut at (2-byte characters). The
// other schema's tombstone triggers call their own function, recognised by the one
// rule that names it (boundedName's byte cut, not a character count): each table's
// Check is OK, and a pool listing both refuses a stale UPDATE and a stale re-INSERT
// of a deleted key on each.
func TestOwnTombstoneFunctionMultibyteName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	name := "tomb_" + strings.Repeat("é", 29) // 63 bytes: the server keeps it whole
	if full := []rune("fencedsql_tombstone_" + name); len(string(full[:40])) <= 46 {
		t.Fatalf("the first 40 characters of %s take %d bytes; want more than 46", string(full), len(string(full[:40])))
	}
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE SCHEMA s2")
	var specs []schema.GuardSpec
	for _, sc := range []string{"public", "s2"} {
		q := sc + "." + longQ(name)
		testdb.Exec(t, raw, "CREATE TABLE "+q+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
		specs = append(specs, schema.GuardSpec{Table: sc + "." + name})
	}
	if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, specs...); err != nil || !longAllOK(reps) {
		t.Fatalf("apply: %v %q", err, fencetest.ReportProblems(reps))
	}
	for _, spec := range specs {
		if reps, err := schema.Check(ctx, raw, postgres.Dialect, spec); err != nil || !longAllOK(reps) {
			t.Errorf("Check of %s: %v %q; want OK (the other schema's tombstone triggers are its own)", spec.Table, err, fencetest.ReportProblems(reps))
		}
	}
	pool := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables="+url.QueryEscape(specs[0].Table+","+specs[1].Table))
	for i, spec := range specs {
		q := []string{"public", "s2"}[i] + "." + longQ(name)
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO "+q+" (id, balance) VALUES (1, 1)"); err != nil {
			t.Errorf("%s: fresh INSERT: %v", spec.Table, err)
			continue
		}
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 90), "UPDATE "+q+" SET balance = 2 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("%s: stale UPDATE: %v; want ErrFenced", spec.Table, err)
		}
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 200), "DELETE FROM "+q+" WHERE id = 1"); err != nil {
			t.Errorf("%s: DELETE: %v", spec.Table, err)
		}
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 150), "INSERT INTO "+q+" (id, balance) VALUES (1, 3)"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("%s: stale re-INSERT: %v; want ErrFenced", spec.Table, err)
		}
	}
}

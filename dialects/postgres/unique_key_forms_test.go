package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// keyForm is one schema in which a uniqueness-enforcing object may depend on a
// fencing column; refused says whether the pool must refuse (ErrSchema) and Check report.
type keyForm struct {
	name    string
	ddl     []string
	tok     string
	refused bool
}

// TestUniqueKeyFormsRefused (kept from red-team rt61a, which found them held): the
// unique-key lint over a set of forms built from a few axes — how the token column is
// spelled in the guard's configuration (as stored, upper case, mixed case, quoted), and
// the uniqueness-enforcing object that depends on it (a key column, an expression, a
// whole-row function, a predicate, a domain-typed column, a deferrable key, NULLS NOT
// DISTINCT, a grandchild's index). The table is keyed on k and id is the token column
// (fenced_token_column), as in fencedsql: TestFencingColumnInUniqueKeyRefused. Oracle:
// Check reports a unique-key problem and the pool refuses with ErrSchema before writing;
// an object on balance only is accepted.
func TestUniqueKeyFormsRefused(t *testing.T) {
	const tbl = "CREATE TABLE accounts (k BIGINT NOT NULL PRIMARY KEY, id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"
	objects := []struct {
		name string
		ddl  []string
	}{
		{"unique index on id", []string{tbl + ")", "CREATE UNIQUE INDEX accounts_id ON accounts (id)"}},
		{"unique index on (id + 0)", []string{tbl + ")", "CREATE UNIQUE INDEX accounts_id ON accounts ((id + 0))"}},
		{"unique index on a whole-row function", []string{tbl + ")",
			"CREATE FUNCTION rowkey(accounts) RETURNS bigint IMMUTABLE LANGUAGE sql AS 'SELECT $1.id'",
			"CREATE UNIQUE INDEX accounts_id ON accounts ((rowkey(accounts)))"}},
		{"partial unique index WHERE a whole-row function", []string{tbl + ")",
			"CREATE FUNCTION rowpred(accounts) RETURNS boolean IMMUTABLE LANGUAGE sql AS 'SELECT $1.id > 0'",
			"CREATE UNIQUE INDEX accounts_b ON accounts (balance) WHERE rowpred(accounts)"}},
		{"domain-typed id in a unique constraint", []string{"CREATE DOMAIN big AS bigint",
			"CREATE TABLE accounts (k BIGINT NOT NULL PRIMARY KEY, id big NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, UNIQUE (id))"}},
		{"deferrable unique constraint", []string{tbl + ", UNIQUE (id) DEFERRABLE INITIALLY DEFERRED)"}},
		{"NULLS NOT DISTINCT", []string{tbl + ", UNIQUE NULLS NOT DISTINCT (balance, id))"}},
		{"grandchild's unique index", []string{tbl + ")", "CREATE TABLE accounts_c () INHERITS (accounts)",
			"CREATE TABLE accounts_gc () INHERITS (accounts_c)", "CREATE UNIQUE INDEX accounts_gc_id ON accounts_gc (id)"}},
	}
	// "ID" and "Id" were tried too: the pool and Check take them as a missing column
	// (ErrSchema), which holds.
	spellings := []string{"id"}
	for _, o := range objects {
		for _, sp := range spellings {
			f := keyForm{name: o.name + "/token " + sp, ddl: append(append([]string{}, o.ddl...), "INSERT INTO accounts (k, id, balance) VALUES (1, 1, 100)"), tok: sp, refused: true}
			t.Run(f.name, func(t *testing.T) { keyFormRefused(t, f) })
		}
	}
}

// keyFormRefused: Check must report a unique-key problem (refused) or none, and the
// pool's first guarded UPDATE under 20 must be ErrSchema (refused) with row 1 unchanged.
func keyFormRefused(t *testing.T, f keyForm) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, f.ddl...)
	spec := schema.GuardSpec{Table: "accounts", TokenColumn: f.tok, VersionColumn: "version"}
	reps, err := schema.Check(schema.WithoutTombstones(ctx), raw, postgres.Dialect, spec)
	if err != nil {
		t.Fatalf("schema.Check: %v", err)
	}
	var keyProblems, all []string
	for _, r := range reps {
		all = append(all, r.Problems...)
		for _, p := range r.Problems {
			if strings.Contains(p, "unique key") {
				keyProblems = append(keyProblems, p)
			}
		}
	}
	if f.refused && len(keyProblems) == 0 {
		t.Errorf("schema.Check (token column configured as %q) reports no unique key depending on it (%s); its problems: %q", f.tok, f.name, all)
	}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
		fencedsql.Guard("accounts", fencedsql.TokenColumn(f.tok), fencedsql.VersionColumn("version")))
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 200 WHERE k = 1")
	if f.refused && !errors.Is(err, fencedsql.ErrSchema) {
		var id, bal int64
		_ = raw.QueryRowContext(ctx, "SELECT id, balance FROM accounts WHERE k = 1").Scan(&id, &bal)
		t.Errorf("fenced UPDATE under 20 with the token column configured as %q (%s): %v; want ErrSchema before writing — row k=1 is now id %d balance %d", f.tok, f.name, err, id, bal)
	}
}

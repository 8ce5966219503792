package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestCopyFromSpellings (kept from red-team rt55d, no finding): a native CopyFrom into
// the guarded acc under identifiers PostgreSQL resolves to it — catalog-qualified
// {current_database(), "public", "acc"} and schema-qualified {"public", "acc"} — is
// refused (ErrUnsupported), with a token and without, and copies nothing;
// {"pg_catalog", "acc"} names no table and fails (refused or the server's error),
// copying nothing.
func TestCopyFromSpellings(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	var dbname string
	if err := raw.QueryRow("SELECT current_database()").Scan(&dbname); err != nil {
		t.Fatal(err)
	}
	np := compNative(t, dsn, false)
	for i, id := range []pgx.Identifier{{dbname, "public", "acc"}, {"public", "acc"}, {"pg_catalog", "acc"}} {
		for j, c := range []context.Context{fencedsql.WithToken(ctx, 1), ctx} {
			key := int64(100 + 2*i + j)
			n, err := np.CopyFrom(c, id, []string{"id", "balance", "fence_token"}, pgx.CopyFromRows([][]any{{key, 1, 999999}}))
			var rows int
			if qerr := raw.QueryRow("SELECT count(*) FROM acc WHERE id = $1", key).Scan(&rows); qerr != nil {
				t.Fatal(qerr)
			}
			if rows != 0 || err == nil || (id[0] != "pg_catalog" && !errors.Is(err, fencedsql.ErrUnsupported)) {
				t.Errorf("CopyFrom %q (token: %v): copied %d (err %v), acc holds %d row(s) of key %d; want ErrUnsupported and nothing copied", id, j == 0, n, err, rows, key)
			}
		}
	}
}

package schema_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// schema.Check reports a TEMP table that shadows the checked name in the checking
// session, judges nothing and gives no Fix (red-team rt46c F5: on PostgreSQL the
// session's temporary schema comes first on the search_path, and Check judged the
// temporary table and its Fix installed the triggers on it, the real table left
// without a guard and nothing saying so). The permanent table named with its schema
// is judged as usual.
func TestCheckRefusesTempShadowPostgres(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Postgres(t)
	admin := testdb.Open(t, "pgx", pg,
		`CREATE TABLE ts_t (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	admin.SetMaxOpenConns(1)
	admin.SetMaxIdleConns(1)
	testdb.Exec(t, admin, `CREATE TEMP TABLE ts_t (LIKE public.ts_t INCLUDING ALL)`)
	tempShadowReported(t, ctx, admin, postgres.Dialect, "ts_t", "public.ts_t")
}

// The same on SQLite: a TEMP table shadows main's table of the same name.
func TestCheckRefusesTempShadowSQLite(t *testing.T) {
	ctx := context.Background()
	raw := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(filepath.Join(t.TempDir(), "m.db")))
	raw.SetMaxOpenConns(1)
	raw.SetMaxIdleConns(1)
	testdb.Exec(t, raw, "CREATE TABLE ts_t (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"CREATE TEMP TABLE ts_t (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)")
	tempShadowReported(t, ctx, raw, sqlite.Dialect, "ts_t", "main.ts_t")
}

// tempShadowReported checks that Check of the shadowed name reports the temporary
// table and gives no Fix, and that Check of the permanent table's qualified name
// judges it (it exists, and the Fix installs its guard).
func tempShadowReported(t *testing.T, ctx context.Context, db *sql.DB, d dialect.Dialect, shadowed, qualified string) {
	t.Helper()
	reps, err := schema.Check(ctx, db, d, schema.GuardSpec{Table: shadowed})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || len(reps[0].Fix) != 0 || len(reps[0].Problems) != 1 || !strings.Contains(reps[0].Problems[0], "TEMPORARY") {
		t.Errorf("Check(%s) where a TEMP table shadows it: %+v; want one problem naming the temporary table, no Fix", shadowed, reps)
	}
	reps, err = schema.Check(ctx, db, d, schema.GuardSpec{Table: qualified})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || !reps[0].Exists || len(reps[0].Fix) == 0 {
		t.Errorf("Check(%s): %+v; want the permanent table judged, with a Fix installing its guard", qualified, reps)
	}
	for _, p := range reps[0].Problems {
		if strings.Contains(p, "TEMPORARY") {
			t.Errorf("Check(%s) reports the shadow: %q", qualified, p)
		}
	}
}

package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

func schemaDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(filepath.Join(t.TempDir(), "db.sqlite")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func schemaExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
}

func TestCheckSchema(t *testing.T) {
	ctx := context.Background()
	db := schemaDB(t)
	schemaExec(t, db,
		"CREATE TABLE fit (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE bare (id INTEGER PRIMARY KEY, amount BIGINT)",
		"CREATE TABLE custom (id INTEGER PRIMARY KEY, tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)",
	)
	g := sqlite.Dialect.(dialect.Guarder)
	ts := sqlite.Dialect.(dialect.Tombstoner)
	schemaExec(t, db, g.GuardDDL(dialect.TableName{Name: "fit"}, "fence_token", "version")...)
	schemaExec(t, db, ts.TombstoneDDL(dialect.TableName{Name: "fit"}, []dialect.KeyColumn{{Name: "id", Type: "INTEGER"}}, "fence_token")...)

	reps, err := schema.Check(ctx, db, sqlite.Dialect,
		schema.GuardSpec{Table: "fit"},
		schema.GuardSpec{Table: "bare"},
		schema.GuardSpec{Table: "custom", TokenColumn: "tok", VersionColumn: "ver"},
		schema.GuardSpec{Table: "missing"},
	)
	if err != nil {
		t.Fatal(err)
	}
	fit, bare, custom, missing := reps[0], reps[1], reps[2], reps[3]
	if !fit.OK() || !fit.Guarded || !fit.Tombstoned || !fit.Exists || !fit.TokenNotNull || !fit.VersionNotNull || len(fit.Fix) != 0 || fit.Table != "fit" || len(fit.SideDoors) != 0 {
		t.Errorf("fit = %+v", fit)
	}
	// Two columns, the guard, the tombstone guard.
	if bare.OK() || !bare.Exists || bare.HasToken || bare.HasVersion || bare.Guarded || bare.Tombstoned || len(bare.Problems) != 4 ||
		!strings.Contains(bare.Problems[3], "no tombstone guard installed") || !slices.Equal(bare.PrimaryKey, []string{"id"}) {
		t.Errorf("bare = %+v", bare)
	}
	wantFix := sqlite.Dialect.GuardColumnsDDL(dialect.TableName{Name: "bare"}, "fence_token", "version", true, true)
	if len(wantFix) != 2 {
		t.Fatalf("SQLite GuardColumnsDDL = %q, want one statement per column", wantFix)
	}
	wantFix = append(wantFix, g.GuardDDL(dialect.TableName{Name: "bare"}, "fence_token", "version")...)
	wantFix = append(wantFix, ts.TombstoneDDL(dialect.TableName{Name: "bare"}, []dialect.KeyColumn{{Name: "id", Type: "INTEGER"}}, "fence_token")...)
	if !slices.Equal(bare.Fix, wantFix) {
		t.Errorf("bare.Fix = %q, want %q", bare.Fix, wantFix)
	}
	if custom.OK() || !custom.HasToken || !custom.HasVersion || custom.Guarded || len(custom.Problems) != 2 {
		t.Errorf("custom = %+v", custom)
	}
	// The tombstone guard of custom records its own token column.
	if want := ts.TombstoneDDL(dialect.TableName{Name: "custom"}, []dialect.KeyColumn{{Name: "id", Type: "INTEGER"}}, "tok"); !slices.Equal(custom.Fix[len(custom.Fix)-len(want):], want) {
		t.Errorf("custom.Fix = %q, want it to end with %q", custom.Fix, want)
	}
	if missing.OK() || missing.Exists || len(missing.Fix) != 0 {
		t.Errorf("missing = %+v", missing)
	}

	// Applying the fixes makes the tables fit.
	schemaExec(t, db, bare.Fix...)
	schemaExec(t, db, custom.Fix...)
	reps, err = schema.Check(ctx, db, sqlite.Dialect, schema.GuardSpec{Table: "bare"},
		schema.GuardSpec{Table: "custom", TokenColumn: "tok", VersionColumn: "ver"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if !r.OK() {
			t.Errorf("after Fix: %+v", r)
		}
	}
	// The guard on custom uses its columns.
	schemaExec(t, db, "INSERT INTO custom (id) VALUES (1)")
	if _, err := db.Exec("UPDATE custom SET tok = tok WHERE id = 1"); err == nil || !sqlite.IsGuardError(err) {
		t.Errorf("plain UPDATE of custom: %v, want a guard error", err)
	}
}

// noGuard is a dialect without the optional Guarder (nor the other capabilities of
// the dialect it embeds, which it says it leaves out: dialect.Reduced).
type noGuarder struct{ dialect.Dialect }

func (noGuarder) OmittedCapabilities() []string {
	return dialect.MissingCapabilities(noGuarder{}, sqlite.Dialect)
}

func TestCheckSchemaWithoutGuarder(t *testing.T) {
	db := schemaDB(t)
	schemaExec(t, db, "CREATE TABLE fit (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	reps, err := schema.Check(context.Background(), db, noGuarder{sqlite.Dialect}, schema.GuardSpec{Table: "fit"})
	if err != nil {
		t.Fatal(err)
	}
	r := reps[0]
	if r.OK() || r.Guarded || len(r.Fix) != 0 || len(r.Problems) != 2 || r.Problems[0] != "no database-side guard available for this dialect" ||
		!strings.HasPrefix(r.Problems[1], "no tombstone guard available for this dialect") {
		t.Errorf("report = %+v", r)
	}
}

// schema.Check reports side doors (here a foreign key whose ON DELETE CASCADE deletes
// guarded rows on SQLite, where the guard cannot refuse a DELETE, and whose ON UPDATE
// SET NULL only an installed guard trigger would refuse: with none installed it is a
// door too, red-team rt65a F1). The lazy check before the first guarded write does not
// require the guards, but refuses both doors (red-team rt42a F3: the cascade
// tombstones rows at their own token; rt65a F1: the SET NULL rewrites rows unfenced).
func TestCheckSchemaSideDoorsLazyCheck(t *testing.T) {
	ctx := context.Background()
	path := filepath.ToSlash(filepath.Join(t.TempDir(), "sd.db"))
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	schemaExec(t, raw,
		"CREATE TABLE owners (id INTEGER PRIMARY KEY)",
		"CREATE TABLE pets (id INTEGER PRIMARY KEY, owner INT REFERENCES owners (id) ON DELETE CASCADE, x INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE toys (id INTEGER PRIMARY KEY, pet INT REFERENCES pets (id) ON UPDATE SET NULL, x INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO owners (id) VALUES (1)", "INSERT INTO pets (id, owner) VALUES (1, 1)", "INSERT INTO toys (id, pet) VALUES (1, 1)")
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "pets"}, schema.GuardSpec{Table: "toys"})
	if err != nil {
		t.Fatal(err)
	}
	pets, toys := reps[0], reps[1]
	if pets.OK() || len(pets.SideDoors) != 1 || pets.SideDoors[0].Kind != dialect.SideDoorCascade || pets.SideDoors[0].Note ||
		!strings.Contains(pets.Problems[len(pets.Problems)-1], "ON DELETE CASCADE") {
		t.Errorf("pets = %+v", pets)
	}
	if len(toys.SideDoors) != 1 || toys.SideDoors[0].Note || len(toys.Notes) != 0 || len(toys.Problems) != 3 ||
		!strings.Contains(toys.Problems[len(toys.Problems)-1], "ON UPDATE SET NULL") {
		t.Errorf("toys = %+v", toys)
	}
	for _, table := range []string{"pets", "toys"} {
		fdb := fencedsql.OpenDB(fencedsql.DSNConnector(raw.Driver(), "file:"+path), fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard(table))
		defer fdb.Close()
		_, err := fdb.ExecContext(withTok(7), "UPDATE "+table+" SET x = 1")
		if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), string(dialect.SideDoorCascade)) {
			t.Errorf("fenced UPDATE of %s with its cascading foreign key and no guard installed: %v, want ErrSchema naming the cascade", table, err)
		}
	}
}

func TestCheckSchemaErrors(t *testing.T) {
	ctx := context.Background()
	db := schemaDB(t)
	for _, spec := range []schema.GuardSpec{
		{Table: "a;b"},
		{Table: "a b"},
		{Table: `"a"`},
		{Table: "s.t.u"},
		{Table: ".t"},
		{Table: ""},
		{Table: "t", TokenColumn: "x'y"},
		{Table: "t", TokenColumn: "v", VersionColumn: "V"},
	} {
		_, err := schema.Check(ctx, db, sqlite.Dialect, spec)
		var ce *schema.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%+v: err = %v, want a *ConfigError", spec, err)
		}
	}
	if _, err := schema.Check(ctx, db, nil, schema.GuardSpec{Table: "t"}); err == nil {
		t.Error("nil dialect accepted")
	}
	// A failed catalog query is an error, and not ErrSchema (the answer is unknown).
	schemaExec(t, db, "CREATE TABLE t (id INTEGER PRIMARY KEY)")
	db.Close()
	reps, err := schema.Check(ctx, db, sqlite.Dialect, schema.GuardSpec{Table: "t"})
	if err == nil || errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "schema.Check t") || len(reps) != 0 {
		t.Errorf("closed DB: %v, %v", reps, err)
	}
}

// withTok binds token n to a background context, for writes through a fenced pool.
func withTok(n uint64) context.Context { return fencedsql.WithToken(context.Background(), n) }

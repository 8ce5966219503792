package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// SQLite compares identifiers ignoring the case of ASCII letters only
// (sqlite3StrICmp): "É" and "é" are two columns, "Ä" and "ä" two tables. The dialect
// folds every name it compares the same way (names.go, foldName/sameName); Go's
// strings.ToLower/EqualFold, which it used, merged such twins into one entry, the
// later one's (red-team rt61b F3).

// checkProblems runs schema.Check (without tombstones) of spec and returns every
// problem and side door it reports, in words.
func checkProblems(t *testing.T, raw *sql.DB, spec schema.GuardSpec) []string {
	t.Helper()
	reps, err := schema.Check(schema.WithoutTombstones(context.Background()), raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatalf("schema.Check: %v", err)
	}
	var out []string
	for _, r := range reps {
		out = append(out, r.Problems...)
		for _, sd := range r.SideDoors {
			out = append(out, string(sd.Kind)+": "+sd.Object+": "+sd.Problem)
		}
	}
	return out
}

// TestKeyFencingUnicodeCaseTwins: a unique key on a generated copy of the token column
// is reported whatever the Unicode case twin declared beside it (the miss: "é",
// computed from balance, hid "É", computed from id), and a key on a column that does
// not depend on the token is not reported because its Unicode twin does (the
// over-refusal).
func TestKeyFencingUnicodeCaseTwins(t *testing.T) {
	const tbl = "CREATE TABLE accounts (k BIGINT NOT NULL PRIMARY KEY, id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"
	cases := []struct {
		name    string
		ddl     []string
		refused string // the generated column the report names, "" for no report
	}{
		{"key on the token copy declared first", []string{tbl + `, "É" BIGINT AS (id) VIRTUAL, "é" BIGINT AS (balance) VIRTUAL)`, `CREATE UNIQUE INDEX u ON accounts ("É")`}, "É"},
		{"key on the token copy declared second", []string{tbl + `, "é" BIGINT AS (balance) VIRTUAL, "É" BIGINT AS (id) VIRTUAL)`, `CREATE UNIQUE INDEX u ON accounts ("É")`}, "É"},
		{"key on an expression of the token copy", []string{tbl + `, "É" BIGINT AS (id) VIRTUAL, "é" BIGINT AS (balance) VIRTUAL)`, `CREATE UNIQUE INDEX u ON accounts ("É" + 0)`}, "É"},
		{"key on a plain twin of the token copy", []string{tbl + `, "é" BIGINT, "É" BIGINT AS (id) VIRTUAL)`, `CREATE UNIQUE INDEX u ON accounts ("é")`}, ""},
		{"key on the balance copy", []string{tbl + `, "É" BIGINT AS (id) VIRTUAL, "é" BIGINT AS (balance) VIRTUAL)`, `CREATE UNIQUE INDEX u ON accounts ("é")`}, ""},
		{"key on an ASCII case spelling of the token copy", []string{tbl + `, "Gé" BIGINT AS (id) VIRTUAL)`, `CREATE UNIQUE INDEX u ON accounts ("gé")`}, "Gé"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := testdb.Open(t, "sqlite", testdb.SQLite(t), c.ddl...)
			var keys []string
			for _, p := range checkProblems(t, raw, schema.GuardSpec{Table: "accounts", TokenColumn: "id", VersionColumn: "version"}) {
				if strings.Contains(p, "unique key") {
					keys = append(keys, p)
				}
			}
			switch {
			case c.refused != "" && (len(keys) != 1 || !strings.Contains(keys[0], "through the generated column "+c.refused)):
				t.Errorf("schema.Check: %q; want one unique-key problem through the generated column %s (%v)", keys, c.refused, c.ddl)
			case c.refused == "" && len(keys) > 0:
				t.Errorf("schema.Check reports a unique key that does not depend on a fencing column (%v): %q", c.ddl, keys)
			}
		})
	}
}

// TestUnicodeCaseTwinGeneratedKeyRefusedByPool: the pool's lazy check refuses the table
// whose unique index is on "É", a generated copy of fence_token, beside "é", a copy of
// balance declared after it (ErrSchema), instead of accepting it and failing the
// current holder's second row under one token with SQLite's UNIQUE error.
func TestUnicodeCaseTwinGeneratedKeyRefusedByPool(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn, `CREATE TABLE accounts (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, "É" BIGINT AS (fence_token) VIRTUAL, "é" BIGINT AS (balance) VIRTUAL)`,
		`CREATE UNIQUE INDEX u ON accounts ("É")`)
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	db := testdb.Open(t, "fenced-sqlite", dsn+"&fenced_tables=accounts")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 60), "INSERT INTO accounts (id, balance) VALUES (1, 1)")
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "through the generated column É") {
		t.Errorf("INSERT under 60 into a table whose unique index u is on a generated copy of the token: %v; want ErrSchema naming the key through É", err)
	}
}

// TestUnicodeCaseTwinTokenColumnAffinity: the token column "Ötok" is TEXT, a later
// unrelated "ötok" BIGINT. schema.Check reports the TEXT affinity ('10' <= '9') and
// the pool refuses the table (ErrSchema), not the guard's constraint error at write
// time: the lint read the twin's type for the token column.
func TestUnicodeCaseTwinTokenColumnAffinity(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, "Ötok" TEXT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, "ötok" BIGINT)`)
	spec := schema.GuardSpec{Table: "accounts", TokenColumn: "Ötok", VersionColumn: "version"}
	if probs := checkProblems(t, raw, spec); !strings.Contains(strings.Join(probs, "\n"), "column Ötok is declared TEXT (TEXT affinity)") {
		t.Errorf("schema.Check does not report the token column Ötok's TEXT affinity (its twin ötok is BIGINT): %q", probs)
	}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, spec)
	db := testdb.Open(t, "fenced-sqlite", dsn+"&fenced_tables=accounts&fenced_token_column=%C3%96tok")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO accounts (id, balance) VALUES (1, 100)")
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "TEXT affinity") {
		t.Errorf("INSERT under 10 into a table whose token column is TEXT: %v; want ErrSchema naming the TEXT affinity", err)
	}
}

// TestConflictClauseOfTableNamedLikeKeyword: the bare table name aſ (U+017F) is a name
// for SQLite, not the keyword AS of CREATE TABLE … AS SELECT: its ON CONFLICT REPLACE
// primary key is reported (the lint's keyword test folded ſ to s and read no body).
func TestConflictClauseOfTableNamedLikeKeyword(t *testing.T) {
	raw := testdb.Open(t, "sqlite", testdb.SQLite(t), `CREATE TABLE aſ (id INTEGER PRIMARY KEY ON CONFLICT REPLACE, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	probs := checkProblems(t, raw, schema.GuardSpec{Table: "aſ"})
	if !strings.Contains(strings.Join(probs, "\n"), "ON CONFLICT REPLACE") {
		t.Errorf("schema.Check of aſ does not report its PRIMARY KEY ON CONFLICT REPLACE: %q", probs)
	}
}

// TestCascadeThroughUnicodeCaseTwinTables: the guarded parent's DELETE cascades into
// two unguarded tables "Ä" and "ä" (two tables for SQLite), and from "ä" into the
// guarded child: schema.Check of parent reports the cascade into child through "ä"
// (the walk took "ä" for "Ä", already visited, and stopped).
func TestCascadeThroughUnicodeCaseTwinTables(t *testing.T) {
	ctx := context.Background()
	raw := testdb.Open(t, "sqlite", testdb.SQLite(t),
		"CREATE TABLE parent (id INTEGER PRIMARY KEY, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		`CREATE TABLE "Ä" (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id) ON DELETE CASCADE)`,
		`CREATE TABLE "ä" (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id) ON DELETE CASCADE)`,
		`CREATE TABLE child (id INTEGER PRIMARY KEY, a_id INTEGER REFERENCES "ä"(id) ON DELETE CASCADE, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)`)
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "parent"}, schema.GuardSpec{Table: "child"})
	reps, err := schema.Check(schema.WithoutTombstones(ctx), raw, sqlite.Dialect, schema.GuardSpec{Table: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	var doors []string
	found := false
	for _, sd := range reps[0].SideDoors {
		doors = append(doors, sd.Object)
		found = found || sd.Kind == dialect.SideDoorCascade && strings.Contains(sd.Object, "on child REFERENCES ä")
	}
	if !found {
		t.Errorf("schema.Check of parent does not report the cascade into the guarded child through ä: %q", doors)
	}
}

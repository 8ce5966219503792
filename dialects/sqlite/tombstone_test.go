package sqlite_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func TestTombstoneDDLShape(t *testing.T) {
	ts := sqlite.Dialect.(dialect.Tombstoner)
	key := []dialect.KeyColumn{{Name: "a", Type: "INTEGER"}, {Name: "b", Type: "TEXT", Collation: "NOCASE"}}
	ddl := ts.TombstoneDDL(dialect.TableName{Schema: "aux", Name: "pairs"}, key, "tok")
	if len(ddl) != 11 {
		t.Fatalf("TombstoneDDL = %q", ddl)
	}
	all := strings.Join(ddl, "\n")
	for _, want := range []string{
		`CREATE TABLE IF NOT EXISTS "aux"."fencedsql_tomb_pairs" ("a" INTEGER NOT NULL, "b" TEXT COLLATE "NOCASE" NOT NULL, fence_token INTEGER NOT NULL, deleted_at REAL NOT NULL, PRIMARY KEY ("a", "b")) WITHOUT ROWID`,
		`CREATE TRIGGER "aux"."fencedsql_tombdel_pairs" AFTER DELETE ON "pairs" FOR EACH ROW`,
		`INSERT INTO "fencedsql_tomb_pairs" ("a", "b", fence_token, deleted_at) SELECT OLD."a", OLD."b", coalesce(OLD."tok", 0),`,
		`CREATE TRIGGER "aux"."fencedsql_tombins_pairs" AFTER INSERT ON "pairs" FOR EACH ROW`,
		`t."a" = NEW."a" AND t."b" = NEW."b" COLLATE "NOCASE" AND t.fence_token > NEW."tok"`,
		`CREATE TRIGGER "aux"."fencedsql_tombkey_pairs" AFTER UPDATE ON "pairs" FOR EACH ROW`,
		`WHEN OLD."a" IS NOT NEW."a" OR OLD."b" IS NOT NEW."b" COLLATE "NOCASE"`,
		`SELECT RAISE(ABORT, 'fencedsql: tombstone on pairs: NOT NULL constraint failed: pairs.tok');`,
		`CREATE TRIGGER "aux"."fencedsql_tombrep_pairs" BEFORE INSERT ON "pairs" FOR EACH ROW`,
		`WHEN EXISTS (SELECT 1 FROM "pairs" o WHERE o."a" = NEW."a" AND o."b" = NEW."b" COLLATE "NOCASE" AND (NEW."tok" IS NULL OR o."tok" > NEW."tok"))`,
		`CREATE TRIGGER "aux"."fencedsql_tombmov_pairs" BEFORE UPDATE ON "pairs" FOR EACH ROW`,
		`SELECT o."a", o."b", max(coalesce(o."tok", 0), coalesce(NEW."tok", 0)), `,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("TombstoneDDL lacks %q:\n%s", want, all)
		}
	}
	// Every trigger carries the version marker TombstoneInstalledQuery requires.
	if n := strings.Count(all, "BEGIN\n  /* fencedsql tombstone guard v4 */\n"); n != 5 {
		t.Errorf("TombstoneDDL has the version marker in %d triggers, want 5:\n%s", n, all)
	}
	if q, args := ts.TombstoneInstalledQuery(dialect.TableName{Name: "pairs"}); !strings.Contains(q, "instr(sql, ?7) > 0") || !slices.Contains(args, any("/* fencedsql tombstone guard v4 */")) {
		t.Errorf("TombstoneInstalledQuery = %q %q, does not require the version marker", q, args)
	}
	if un := ts.UntombstoneDDL(dialect.TableName{Name: "pairs"}); len(un) != 6 || un[1] != `DROP TRIGGER IF EXISTS "fencedsql_tombins_pairs"` {
		t.Errorf("UntombstoneDDL = %q", un)
	}
}

// TestTombstoneUpgradeFromBeforeInsert: a tombstone guard installed by the previous
// version, whose INSERT check was a BEFORE INSERT trigger (blind to a rowid SQLite
// chooses: NEW.<key> reads -1 there), is reported as not installed; schema.Check's
// Fix replaces it, after which an implicit-key INSERT under an older token that would
// reuse the highest key, deleted under a newer token, fails with ErrFenced.
func TestTombstoneUpgradeFromBeforeInsert(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn)
	exec := func(stmts ...string) {
		t.Helper()
		for _, st := range stmts {
			if _, err := raw.ExecContext(ctx, st); err != nil {
				t.Fatalf("%v\n-- statement:\n%s", err, st)
			}
		}
	}
	exec("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	table := dialect.TableName{Name: "accounts"}
	exec(sqlite.Dialect.(dialect.Guarder).GuardDDL(table, schema.DefaultTokenColumn, schema.DefaultVersionColumn)...)
	// The previous version's DDL: the INSERT check BEFORE INSERT, no version marker.
	ts := sqlite.Dialect.(dialect.Tombstoner)
	var old []string
	for _, st := range ts.TombstoneDDL(table, []dialect.KeyColumn{{Name: "id", Type: "INTEGER"}}, schema.DefaultTokenColumn) {
		if strings.Contains(st, "fencedsql_tombrep_") || strings.Contains(st, "fencedsql_tombmov_") {
			continue // v3's
		}
		st = strings.Replace(st, " AFTER INSERT ON ", " BEFORE INSERT ON ", 1)
		old = append(old, strings.Replace(st, "  /* fencedsql tombstone guard v4 */\n", "", 1))
	}
	exec(old...)
	if strings.Contains(strings.Join(old, "\n"), "guard v") || !strings.Contains(strings.Join(old, "\n"), "BEFORE INSERT") {
		t.Fatalf("previous version's DDL not reconstructed:\n%s", strings.Join(old, "\n"))
	}

	spec := schema.GuardSpec{Table: "accounts"}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	if rep := reps[0]; rep.OK() || !rep.Guarded || rep.Tombstoned || len(rep.Fix) == 0 || !strings.Contains(strings.Join(rep.Problems, "; "), "tombstone") {
		t.Fatalf("report with the previous version's tombstone guard = %+v, want it outdated", rep)
	}
	exec(reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || !reps[0].OK() || !reps[0].Tombstoned {
		t.Fatalf("report after Fix = %+v, %v", reps, err)
	}
	var ins string
	if err := raw.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE name = 'fencedsql_tombins_accounts'").Scan(&ins); err != nil || !strings.Contains(ins, "AFTER INSERT") {
		t.Fatalf("tombstone INSERT trigger after Fix = %q, %v", ins, err)
	}

	db := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	tok := func(n uint64) context.Context { return fencedsql.WithToken(ctx, n) }
	if _, err := db.ExecContext(tok(9), "INSERT INTO accounts (id, balance) VALUES (1, 1), (2, 2), (3, 3)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(tok(20), "DELETE FROM accounts WHERE id = 3"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(tok(10), "INSERT INTO accounts (balance) VALUES (777)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale implicit-key INSERT reusing key 3: err = %v, want ErrFenced", err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE id = 3 OR balance = 777").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d row(s) written by the refused INSERT (%v)", n, err)
	}
}

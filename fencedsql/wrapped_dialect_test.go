package fencedsql_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// wrappedDialect is how an application customises a dialect (a method overridden, a
// metric added): the dialect embedded as its interface. Every optional capability the
// wrapper finds by type assertion (Registrar, GuardFinder, TriggerDoorFinder,
// SchemaLinter, DescendantFinder, TempShadowFinder, …) is hidden by it.
type wrappedDialect struct{ dialect.Dialect }

// red-team rt44b F2: a pool given a wrapped dialect (and a listed table, so that the "guards no
// table" warning does not fire) opens without a word and does not guard the other
// tables the database records as guarded (the registry written by fencedsql-schema
// -apply / schema.RegisterTables): a stale write of a registered table goes through
// the wrapper unfenced. Now the pool does not open: a *ConfigError naming the
// capabilities the wrapper hides (dialectComplete).
func TestWrappedStockDialectRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path,
		`CREATE TABLE rt44b_acc (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO rt44b_acc (id, fence_token, version) VALUES (1, 10, 1)`,
		`CREATE TABLE rt44b_listed (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "rt44b_acc"}); err != nil {
		t.Fatal(err)
	}
	// Control: the stock dialect guards the registered table.
	stock := testdb.Open(t, sqlite.DriverName, "file:"+path)
	if _, err := stock.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE rt44b_acc SET balance = 1 WHERE id = 1`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("control, stock dialect: stale UPDATE: %v; want ErrFenced", err)
	}
	var logs bytes.Buffer
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+path),
		fencedsql.WithDialect(wrappedDialect{sqlite.Dialect}), fencedsql.Guard("rt44b_listed"),
		fencedsql.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	t.Cleanup(func() { db.Close() })
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE rt44b_acc SET balance = 666 WHERE id = 1`)
	var ce *fencedsql.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "Registrar") || !strings.Contains(err.Error(), "GuardFinder") {
		var tok, bal int64
		_ = raw.QueryRow(`SELECT fence_token, balance FROM rt44b_acc WHERE id = 1`).Scan(&tok, &bal)
		t.Errorf("wrapped dialect: stale UPDATE (token 5 < row's 10) of a registered table: err %v, row now token %d balance %d; want a *ConfigError naming Registrar and GuardFinder (warnings logged: %q)", err, tok, bal, logs.String())
	}
}

// renamedDialect is the same customisation under a Name that is not the stock one: a
// product name, a common alias, the stock name in another case.
type renamedDialect struct {
	dialect.Dialect
	name string
}

func (r renamedDialect) Name() string { return r.name }

// red-team rt45c F1: the check compared names byte for byte, so the stock dialect
// embedded as its interface under any other Name — "SQLite", "sqlite3",
// "sqlite-custom" — opened without an error or a warning, and the pool did not read the
// registry of guarded tables nor the guard triggers: a stale UPDATE of a table the
// database records as guarded landed (rt44b F2's outcome), and with the guards
// installed an UPDATE bumping the version itself passed the row guard. Now a dialect
// built on another is refused whatever its Name (a *ConfigError wrapping a
// *dialect.IncompleteError), and nothing is written.
func TestWrappedDialectRefusedWhateverItsName(t *testing.T) {
	for _, guards := range []bool{false, true} {
		for _, name := range []string{"SQLite", "sqlite3", "sqlite-custom"} {
			t.Run(fmt.Sprintf("%s/guards=%v", name, guards), func(t *testing.T) {
				ctx := context.Background()
				path := filepath.Join(t.TempDir(), "t.db")
				raw := testdb.Open(t, "sqlite", "file:"+path,
					`CREATE TABLE renamed_acc (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
					`INSERT INTO renamed_acc (id, fence_token, version) VALUES (1, 10, 1)`,
					`CREATE TABLE renamed_listed (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
				spec := schema.GuardSpec{Table: "renamed_acc"}
				if guards {
					reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range reps {
						testdb.Exec(t, raw, r.Fix...)
					}
				}
				if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, spec); err != nil {
					t.Fatal(err)
				}
				db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+path),
					fencedsql.WithDialect(renamedDialect{sqlite.Dialect, name}), fencedsql.Guard("renamed_listed"))
				t.Cleanup(func() { db.Close() })
				_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE renamed_acc SET balance = 666, version = version + 1 WHERE id = 1`)
				var ce *fencedsql.ConfigError
				var ie *dialect.IncompleteError
				if !errors.As(err, &ce) || !errors.As(err, &ie) || !strings.Contains(err.Error(), "Registrar") || !strings.Contains(err.Error(), "GuardFinder") {
					t.Errorf("stale UPDATE through a dialect %q built on the stock one: %v; want a *ConfigError wrapping a *dialect.IncompleteError naming Registrar and GuardFinder", name, err)
				}
				var bal int64
				if qerr := raw.QueryRow(`SELECT balance FROM renamed_acc WHERE id = 1`).Scan(&bal); qerr != nil || bal == 666 {
					t.Errorf("the stale UPDATE landed (balance %d, %v)", bal, qerr)
				}
			})
		}
	}
}

// ownName is a reduced dialect that says which capabilities it leaves out on purpose
// (dialect.Reduced): it opens, whatever its name. Without saying so (a name of its own
// was enough before red-team rt45c F1) it is refused.
type ownName struct{ dialect.Dialect }

func (ownName) Name() string { return "sqlite-reduced" }

type ownNameSaid struct{ ownName }

func (ownNameSaid) OmittedCapabilities() []string {
	return dialect.MissingCapabilities(ownName{}, sqlite.Dialect)
}

func TestReducedDialectOpensOnlyWhenItSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+path), fencedsql.WithDialect(ownNameSaid{ownName{sqlite.Dialect}}))
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatalf("a reduced dialect naming what it leaves out: %v", err)
	}
	silent := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+path), fencedsql.WithDialect(ownName{sqlite.Dialect}))
	t.Cleanup(func() { silent.Close() })
	var ie *dialect.IncompleteError
	if err := silent.Ping(); !errors.As(err, &ie) {
		t.Fatalf("a reduced dialect under a name of its own, not saying what it leaves out: %v; want a *dialect.IncompleteError", err)
	}
}

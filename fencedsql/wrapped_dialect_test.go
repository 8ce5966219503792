package fencedsql_test

import (
	"bytes"
	"context"
	"errors"
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

// ownName is a reduced dialect that says so with a name of its own: not refused.
type ownName struct{ dialect.Dialect }

func (ownName) Name() string { return "sqlite-reduced" }

func TestWrappedDialectWithOwnNameOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+path), fencedsql.WithDialect(ownName{sqlite.Dialect}))
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatalf("a reduced dialect under a name of its own: %v", err)
	}
}

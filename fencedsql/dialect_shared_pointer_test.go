package fencedsql_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// sharedPtrWrap: the stock dialect embedded as its interface, used through a pointer.
type sharedPtrWrap struct{ dialect.Dialect }

// sharedPtrLimited: a variant that says it leaves capabilities out on purpose.
type sharedPtrLimited struct {
	dialect.Dialect
	List []string
}

func (l sharedPtrLimited) OmittedCapabilities() []string { return l.List }

// sharedPtrApp: the application's dialect — the pointer wrapper embedded (its methods
// are the wrapper's), and beside it a limited variant of the same wrapper kept for a
// fallback path, declared first. Its own Name.
type sharedPtrApp struct {
	Limited sharedPtrLimited
	dialect.Dialect
}

func (sharedPtrApp) Name() string { return "app-sqlite" }

// A dialect whose embedded wrapper pointer is also held by a sibling that omits
// capabilities on purpose is judged on its own path (red-team rt46c F2): dialect.Complete
// kept one "seen" set of pointers for the whole walk, the sibling's omissions excused
// the app, which hides every optional capability of the stock SQLite dialect, the pool
// opened without reading the registry, and a stale UPDATE (token 5 < the row's 10) of a
// table the database records as guarded landed. Now Open refuses it.
func TestSharedPointerDialectHidingCapabilitiesRefusedAtOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path,
		`CREATE TABLE sp_acc (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO sp_acc (id, fence_token, version) VALUES (1, 10, 1)`,
		`CREATE TABLE sp_listed (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "sp_acc"}); err != nil {
		t.Fatal(err)
	}
	w := &sharedPtrWrap{sqlite.Dialect}
	all := dialect.MissingCapabilities(w, sqlite.Dialect)
	app := sharedPtrApp{Limited: sharedPtrLimited{w, all}, Dialect: w}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+path),
		fencedsql.WithDialect(app), fencedsql.Guard("sp_listed"))
	t.Cleanup(func() { db.Close() })
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE sp_acc SET balance = 666 WHERE id = 1`)
	var bal int64
	if qerr := raw.QueryRow(`SELECT balance FROM sp_acc WHERE id = 1`).Scan(&bal); qerr != nil {
		t.Fatal(qerr)
	}
	var ie *dialect.IncompleteError
	if !errors.As(err, &ie) || bal == 666 {
		t.Errorf("stale UPDATE through a dialect hiding %d capabilities of the stock dialect under it: err %v, balance now %d; want a *ConfigError wrapping a *dialect.IncompleteError, nothing written", len(all), err, bal)
	}
}

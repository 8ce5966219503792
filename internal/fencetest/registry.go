package fencetest

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// testConfigMistakes (G13, nothing fails open): each mistake a person makes with the
// list of guarded tables is either fenced or refused with a clear error, never left
// unfenced without a word —
//   - a typo in fenced_tables (tenats for tenants): the pool's first use fails with
//     ErrSchema naming the listed table and the registered ones;
//   - a table left out of the list, registered by fencedsql-schema: fenced anyway;
//   - the list omitted entirely: every registered table fenced;
//   - a listed table that exists but is unfit: refused before its first guarded write.
func (s *guardSuite) testConfigMistakes(t *testing.T) {
	e := setup(t, s.b)
	s.exec(e, strings.Replace(s.b.TableDDL, "accounts", "tenants", 1), strings.Replace(s.b.TableDDL, "accounts", "invoices", 1))
	if err := schema.RegisterTables(e.ctx, e.raw, s.d, schema.GuardSpec{Table: "tenants"}, schema.GuardSpec{Table: "invoices"}); err != nil {
		t.Fatal(err)
	}
	if err := schema.RegisterTables(e.ctx, e.raw, s.d, schema.GuardSpec{Table: "tenants"}); err != nil {
		t.Fatalf("registering twice: %v", err)
	}
	ins := func(table string) string { return e.q("INSERT INTO " + table + " (id, balance) VALUES (?, ?)") }

	// The typo: any statement fails, naming the listed table and what is registered.
	typo := e.fencedOn(t, "tenats")
	_, err := typo.ExecContext(e.ctx, e.q("SELECT COUNT(*) FROM accounts"))
	var se *fencedsql.SchemaError
	if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || se.Table != "tenats" || !strings.Contains(err.Error(), "tenants") {
		t.Fatalf("typo tenats: err = %v, want ErrSchema naming tenats and the registered tenants", err)
	}
	if err := typo.PingContext(e.ctx); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("typo tenats: Ping = %v, want ErrSchema", err)
	}

	// Left out of the list (only accounts listed): tenants and invoices are fenced.
	partial := e.fencedOn(t, "accounts")
	for _, table := range []string{"tenants", "invoices", "accounts"} {
		if _, err := partial.ExecContext(e.ctx, ins(table), 1, 1); !errors.Is(err, fencedsql.ErrNoToken) {
			t.Fatalf("%s through a pool listing only accounts, no token: err = %v, want ErrNoToken (guarded)", table, err)
		}
	}
	if _, err := partial.ExecContext(tok(e.ctx, 20), ins("tenants"), 1, 1); err != nil {
		t.Fatal(err)
	}
	_, err = partial.ExecContext(tok(e.ctx, 10), e.q("UPDATE tenants SET balance = 2 WHERE id = ?"), 1)
	wantErr(t, err, fencedsql.ErrFenced)

	// No list at all: the registry is the list.
	none := e.fencedOnDSN(t, e.dsn)
	if _, err := none.ExecContext(e.ctx, ins("invoices"), 1, 1); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatalf("invoices through a pool with no list: err = %v, want ErrNoToken (guarded)", err)
	}
	if _, err := none.ExecContext(e.ctx, e.q("UPDATE accounts SET balance = 1")); err != nil {
		t.Fatalf("accounts, neither listed nor registered, passes: %v", err)
	}

	// A pool allowed to run DDL still reads the registry (it may create its listed
	// tables, which are then checked before their first guarded write only).
	ddl := e.fencedOnDSN(t, WithParam(e.dsn, "fenced_allow=ddl"))
	if _, err := ddl.ExecContext(e.ctx, ins("invoices"), 2, 1); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatalf("invoices through a pool with fenced_allow=ddl: err = %v, want ErrNoToken (guarded)", err)
	}

	// A listed table whose columns differ from the registered ones: refused at first use.
	cols := e.fencedOnDSN(t, WithParam(WithParam(e.dsn, "fenced_tables=tenants"), "fenced_token_column=balance"))
	err = cols.PingContext(e.ctx)
	if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || se.Table != "tenants" {
		t.Fatalf("tenants listed with another token column than registered: Ping = %v, want ErrSchema naming tenants", err)
	}

	// An empty list (an unset variable in a DSN template) is refused when the pool opens.
	if db, err := sql.Open(e.b.DriverName, WithParam(e.dsn, "fenced_tables=")); err == nil {
		err = db.PingContext(e.ctx)
		db.Close()
		if err == nil {
			t.Fatal("fenced_tables= (no table) opened a pool")
		}
	}
}

// fencedOnDSN opens the fenced driver on dsn as it is.
func (e *env) fencedOnDSN(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(e.b.DriverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

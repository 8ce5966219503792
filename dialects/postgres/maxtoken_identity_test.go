package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// guardAccountsIn installs the guards of <schema>.accounts the way fencedsql-schema -apply
// does (a connection whose search_path is that schema) and writes row 1 under tok
// through a fenced pool on the same search_path.
func guardAccountsIn(t *testing.T, dsn, schemaName string, tok uint64) {
	t.Helper()
	ctx := context.Background()
	sdsn := fencetest.WithParam(dsn, "search_path="+schemaName)
	adm := rawWith(t, sdsn, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	reports, err := schema.Check(ctx, adm, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		applyFix(t, ctx, adm, r.Fix)
	}
	db, err := sql.Open("fenced-pgx", fencetest.WithParam(sdsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, tok), "INSERT INTO accounts (id, balance) VALUES (1, 0)"); err != nil {
		t.Fatalf("%s: insert under %d: %v", schemaName, tok, err)
	}
}

// red-team rt40c F1: MaxToken with no tables (what `fencedsql-schema -max-token` runs at a lock-service
// switch, rebuild or restore) must count every guarded table of the database. Two
// applications' schemas each hold a guarded table "accounts" (each registered in its
// own schema's registry, as -apply under its search_path does). The registries' rows
// and the trigger-found tables are merged by bare name and read through the calling
// connection's search_path, so the other schema's table — holding token 500 — is never
// read: MaxToken answers 10, the new lock service is raised to 11, and tokens go back
// below 500, a token the database accepted.
func TestMaxTokenReadsSameNamedTableOfEverySchema(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	admin := rawWith(t, dsn, "CREATE SCHEMA mt_identity_app")
	guardAccountsIn(t, dsn, "public", 10)
	guardAccountsIn(t, dsn, "mt_identity_app", 500)

	m, err := schema.MaxToken(ctx, admin, postgres.Dialect)
	if err != nil {
		t.Fatalf("MaxToken: %v", err)
	}
	if m != 500 {
		t.Fatalf("MaxToken = %d, want at least 500 (mt_identity_app.accounts holds token 500): a new lock service raised to %d grants tokens below one the database accepted", m, m+1)
	}
}

// red-team rt40c F2: MaxToken reads each guarded table with a plain MAX(fence_token), which row-level
// security filters: run by a role a policy restricts (the application's role, a
// least-privilege operator's; or the owner under FORCE ROW LEVEL SECURITY) it sees only
// the rows the policy lets it see and answers a token below one the database accepted,
// with no error. A multi-tenant table whose policy shows one tenant: tenant a's row
// holds token 500, tenant b's 10; MaxToken as a role of tenant b answers 10.
func TestMaxTokenRefusesRowSecurityFilter(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	role := "mt_identity_rls_reader"
	admin := rawWith(t, dsn,
		"DROP ROLE IF EXISTS "+role,
		"CREATE ROLE "+role+" NOLOGIN",
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, tenant text NOT NULL DEFAULT '', balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	t.Cleanup(func() {
		c, err := sql.Open("pgx", dsn)
		if err == nil {
			c.Exec("DROP OWNED BY " + role)
			c.Exec("DROP ROLE IF EXISTS " + role)
			c.Close()
		}
	})
	reports, err := schema.Check(ctx, admin, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		applyFix(t, ctx, admin, r.Fix)
	}
	db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 500), "INSERT INTO accounts (id, tenant, balance) VALUES (1, 'a', 0)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO accounts (id, tenant, balance) VALUES (2, 'b', 0)"); err != nil {
		t.Fatal(err)
	}
	rawWith(t, dsn,
		"ALTER TABLE accounts ENABLE ROW LEVEL SECURITY",
		"CREATE POLICY tenant_rows ON accounts USING (tenant = pg_catalog.current_setting('app.tenant', true))",
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO "+role,
		"GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO "+role)

	reader := rawWith(t, dsn)
	reader.SetMaxOpenConns(1)
	reader.SetMaxIdleConns(1)
	for _, q := range []string{"SET ROLE " + role, "SET app.tenant = 'b'"} {
		if _, err := reader.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	m, err := schema.MaxToken(ctx, reader, postgres.Dialect)
	var rse *schema.MaxTokenRowSecurityError
	if !errors.As(err, &rse) {
		t.Fatalf("MaxToken under row-level security = %d, %v; want a *MaxTokenRowSecurityError (row 1, hidden by the policy, holds token 500): "+
			"a lock service raised to %d grants tokens below one the database accepted", m, err, m+1)
	}
	// The owner (no FORCE ROW LEVEL SECURITY) reads every row.
	if m, err := schema.MaxToken(ctx, admin, postgres.Dialect); err != nil || m != 500 {
		t.Fatalf("MaxToken as the owner = %d, %v; want 500", m, err)
	}
}

// red-team rt40c F1 (class, case): the tables found by their guard triggers alone (a guard installed
// without registering the table, which schema.Guarded counts) are named to MaxToken by
// their bare name, merged by lower case and unquoted: of accounts (token 10) and
// "Accounts" (token 500), both carrying the guard, only accounts is read.
func TestMaxTokenReadsCaseTwins(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	const cols = " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	g := postgres.Dialect.(dialect.Guarder)
	stmts := []string{"CREATE TABLE accounts" + cols, `CREATE TABLE "Accounts"` + cols}
	stmts = append(stmts, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	stmts = append(stmts, g.GuardDDL(dialect.TableName{Name: "Accounts"}, "fence_token", "version")...)
	stmts = append(stmts,
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 10, 1)",
		`INSERT INTO "Accounts" (id, balance, fence_token, version) VALUES (1, 0, 500, 1)`)
	admin := rawWith(t, dsn, stmts...)

	m, err := schema.MaxToken(ctx, admin, postgres.Dialect)
	if err != nil || m != 500 {
		t.Fatalf(`MaxToken = %d, %v; want 500 ("Accounts", a case twin of the guarded accounts, holds token 500)`, m, err)
	}
}

// red-team rt40c F1 (class, shadowing): with PostgreSQL's default search_path ("$user", public) a
// schema named after the role running -max-token, holding an ordinary (unguarded)
// table of the guarded table's name, is what MaxToken reads: the registry's
// unqualified row resolves through the caller's path. public.accounts holds token 500;
// MaxToken answers the shadow's 0.
func TestMaxTokenNotShadowedByUserSchema(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	guardAccountsIn(t, dsn, "public", 500)
	admin := rawWith(t, dsn)
	var user string
	if err := admin.QueryRowContext(ctx, "SELECT current_user").Scan(&user); err != nil {
		t.Fatal(err)
	}
	rawWith(t, dsn, `CREATE SCHEMA "`+user+`"`,
		`CREATE TABLE "`+user+`".accounts (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0)`)
	reader := rawWith(t, fencetest.WithParam(dsn, `search_path="$user",public`))
	m, err := schema.MaxToken(ctx, reader, postgres.Dialect)
	if err != nil || m != 500 {
		t.Fatalf(`MaxToken with search_path "$user", public = %d, %v; want 500 (public.accounts, guarded, holds token 500)`, m, err)
	}
}

package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestPurgeTombstonesResolvesSchema (red-team rt34a F4): schema.Check and
// schema.TombstoneFix resolve an unqualified table through the session's search_path
// and install its tombstone table in the table's schema (app.fencedsql_tomb_accounts
// for app.accounts, search_path=app). Before, schema.PurgeTombstones (and
// `fencedsql-schema -purge-tombstones`) handed the unqualified name to
// PurgeTombstonesQuery, which took it as public's (tombSchema): with the same DSN and
// name it failed with a raw 42P01 where only app.accounts is guarded, and where a
// public.accounts is guarded too it purged public's tombstones, reported success and
// left app's — a stale holder then re-inserted into public.accounts a key deleted
// there. Now the purge resolves the name as TombstoneFix does: app's aged tombstone
// goes, public's stays, and the stale INSERT into public.accounts is refused.
func TestPurgeTombstonesResolvesSchema(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	rawWith(t, dsn, "CREATE SCHEMA app")
	appDSN := fencetest.WithParam(dsn, "search_path=app")
	pub := rawWith(t, dsn, guardTableAccounts, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1)")
	app := rawWith(t, appDSN, guardTableAccounts, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1)")
	for _, db := range []*struct{ name, dsn string }{{"public", dsn}, {"app", appDSN}} {
		raw := rawWith(t, db.dsn)
		reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
		if err != nil {
			t.Fatal(err)
		}
		testdb.Exec(t, raw, reps[0].Fix...)
		fenced := testdb.Open(t, "fenced-pgx", fencetest.WithParam(db.dsn, "fenced_tables=accounts"))
		if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 1"); err != nil {
			t.Fatalf("%s: fenced DELETE under 70: %v", db.name, err)
		}
	}
	// Both tombstones are two hours old. public.accounts belongs to another service,
	// which keeps its tombstones for a day; this operator purges app.accounts' (1h).
	testdb.Exec(t, app, "UPDATE app.fencedsql_tomb_accounts SET deleted_at = now() - interval '2 hours'")
	testdb.Exec(t, pub, "UPDATE public.fencedsql_tomb_accounts SET deleted_at = now() - interval '2 hours'")
	n, err := schema.PurgeTombstones(ctx, app, postgres.Dialect, time.Hour, "accounts")
	if err != nil {
		t.Errorf("PurgeTombstones(1h, \"accounts\") on the DSN whose search_path schema.Check resolved accounts by: %v", err)
	}
	var appLeft, pubLeft int
	if err := app.QueryRowContext(ctx, "SELECT count(*) FROM app.fencedsql_tomb_accounts").Scan(&appLeft); err != nil {
		t.Fatal(err)
	}
	if err := pub.QueryRowContext(ctx, "SELECT count(*) FROM public.fencedsql_tomb_accounts").Scan(&pubLeft); err != nil {
		t.Fatal(err)
	}
	if appLeft != 0 || n != 1 {
		t.Errorf("PurgeTombstones purged %d; app.accounts' tombstone two hours old is still there (%d left), want it purged", n, appLeft)
	}
	if pubLeft != 1 {
		t.Errorf("PurgeTombstones(\"accounts\") with search_path=app purged public.accounts' tombstone, a table it was not asked to purge (%d left, want 1)", pubLeft)
	}
	// public's tombstone, purged by mistake, no longer refuses a stale re-insert there
	// (app's, still there, does).
	fencedApp := testdb.Open(t, "fenced-pgx", fencetest.WithParam(appDSN, "fenced_tables=accounts"))
	_, errApp := fencedApp.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO accounts (id, balance) VALUES (1, 666)")
	fencedPub := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, errPub := fencedPub.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO accounts (id, balance) VALUES (1, 666)")
	t.Logf("stale INSERT (65) of key 1 deleted under 70: app.accounts: %v; public.accounts: %v", errApp, errPub)
	if errPub == nil {
		t.Errorf("a stale INSERT (token 65) into public.accounts of a key deleted there under 70 was accepted after PurgeTombstones(1h, \"accounts\") for app.accounts; want ErrFenced")
	}
}

package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rlsRole is the non-superuser role the row-security pools run as (superusers bypass
// row security). It is created once in the cluster (NOLOGIN) and reused; each test
// revokes its grants in the test's database on cleanup.
const rlsRole = "fsql_rls_app"

// rowSecurityPools returns the table acc (absentAcc's, guards installed) with row 7 at
// token 10, row-level security enabled on it with the policies given (none: one FOR
// ALL policy hiding every row from a transaction that set fsql_rls.hide = on), a
// fenced pool whose sessions run as rlsRole (app) and the superuser's fenced pool (su).
func rowSecurityPools(t *testing.T, policies ...string) (raw, app, su *sql.DB) {
	t.Helper()
	raw, su, dsn := absentAccDSN(t)
	if err := insertAs(su, 10, "INSERT INTO acc (id, balance) VALUES (7, 1)"); err != nil {
		t.Fatal(err)
	}
	if len(policies) == 0 {
		policies = []string{"CREATE POLICY rls_all ON acc USING (" + rlsShown + ")"}
	}
	stmts := []string{
		"DO $$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + rlsRole + "') THEN CREATE ROLE " + rlsRole + " NOLOGIN; END IF; END$$",
		"GRANT USAGE ON SCHEMA public TO " + rlsRole,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + rlsRole,
		"ALTER TABLE acc ENABLE ROW LEVEL SECURITY",
	}
	for _, q := range append(stmts, policies...) {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { raw.Exec("DROP OWNED BY " + rlsRole) }) //nolint:errcheck
	app = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc&role="+rlsRole)
	var who string
	if err := app.QueryRow("SELECT current_user").Scan(&who); err != nil || who != rlsRole {
		t.Fatalf("pool runs as %q, %v; want %s", who, err, rlsRole)
	}
	return raw, app, su
}

// rlsShown is true unless the transaction set fsql_rls.hide = on.
const rlsShown = "pg_catalog.current_setting('fsql_rls.hide', true) IS DISTINCT FROM 'on'"

// updateHidden are policies under which every row of acc is visible to SELECT,
// INSERT and DELETE, and none to UPDATE in a transaction that set fsql_rls.hide = on.
var updateHidden = []string{
	"CREATE POLICY rls_sel ON acc FOR SELECT USING (true)",
	"CREATE POLICY rls_del ON acc FOR DELETE USING (true)",
	"CREATE POLICY rls_ins ON acc FOR INSERT WITH CHECK (true)",
	"CREATE POLICY rls_upd ON acc FOR UPDATE USING (" + rlsShown + ")",
}

// deleteHidden runs, under tok, in a transaction of db that set fsql_rls.hide = on,
// the DELETE query; it returns the DELETE's error, its count and the rows of key 7
// left (read by raw).
func deleteHidden(t *testing.T, raw, db *sql.DB, tok uint64, query string) (derr error, n int64, left int) {
	t.Helper()
	ctx := fencedsql.WithToken(context.Background(), tok)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "SELECT pg_catalog.set_config('fsql_rls.hide', 'on', true)"); err != nil {
		t.Fatalf("set_config: %v", err)
	}
	res, derr := tx.ExecContext(ctx, query)
	if derr == nil {
		n, _ = res.RowsAffected()
		derr = tx.Commit()
	}
	if err := raw.QueryRow("SELECT count(*) FROM acc WHERE id = 7").Scan(&left); err != nil {
		t.Fatal(err)
	}
	return derr, n, left
}

// wantRowSecurityRefusal fails unless err is the two-statement DELETE's refusal
// naming row security, with key 7 left in place.
func wantRowSecurityRefusal(t *testing.T, what string, err error, n int64, left int) {
	t.Helper()
	var ue *fencedsql.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "row-level security") || left != 1 {
		t.Fatalf("%s: %v (%d rows), %d rows of key 7 left; want an *UnsupportedError naming row-level security, the row kept", what, err, n, left)
	}
}

// red-team rt47i F1: a stale DELETE (token 5) in the two-statement form (a subquery)
// of key 7 (token 10), which a policy hides from UPDATE and not from DELETE: the
// fencing UPDATE reached no row, the DELETE deleted only the rows it stamped, and the
// statement reported success with 0 rows instead of ErrFenced. Now the two statements
// are refused on that table, before anything is sent.
func TestTwoStepDeleteUnderUpdateHidingPolicyStaleRefused(t *testing.T) {
	raw, app, _ := rowSecurityPools(t, updateHidden...)
	derr, n, left := deleteHidden(t, raw, app, 5, "DELETE FROM acc WHERE id IN (SELECT 7)")
	wantRowSecurityRefusal(t, "stale two-statement DELETE under an UPDATE-hiding policy", derr, n, left)
}

// red-team rt47i F2: the same DELETE under a newer token (60) reported success, 0
// rows, and left the row (unwrapped it deletes it). Now refused, loudly; so is the
// DELETE … RETURNING form, and one under ExpectVersion (two statements whatever its
// condition).
func TestTwoStepDeleteUnderUpdateHidingPolicyCurrentRefused(t *testing.T) {
	raw, app, _ := rowSecurityPools(t, updateHidden...)
	derr, n, left := deleteHidden(t, raw, app, 60, "DELETE FROM acc WHERE id IN (SELECT 7)")
	wantRowSecurityRefusal(t, "two-statement DELETE (token 60) under an UPDATE-hiding policy", derr, n, left)

	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := app.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var id int64
	err = tx.QueryRowContext(ctx, "DELETE FROM acc WHERE id IN (SELECT 7) RETURNING id").Scan(&id)
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("DELETE … RETURNING in the two-statement form: %v; want ErrUnsupported", err)
	}
	_ = tx.Rollback()
	vctx := fencedsql.ExpectVersion(ctx, 1)
	if _, err := app.ExecContext(vctx, "DELETE FROM acc WHERE id = 7"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("DELETE under ExpectVersion (two statements): %v; want ErrUnsupported", err)
	}
}

// A DELETE policy under which a SELECT policy is not implied: a DELETE whose
// condition reads no column of the table does not get the SELECT policies, the
// fencing UPDATE does — the same silent narrowing through SELECT. Refused.
func TestTwoStepDeleteUnderSelectHidingPolicyRefused(t *testing.T) {
	raw, app, _ := rowSecurityPools(t,
		"CREATE POLICY rls_sel ON acc FOR SELECT USING ("+rlsShown+")",
		"CREATE POLICY rls_mod ON acc FOR DELETE USING (true)",
		"CREATE POLICY rls_upd ON acc FOR UPDATE USING (true)",
		"CREATE POLICY rls_ins ON acc FOR INSERT WITH CHECK (true)")
	derr, n, left := deleteHidden(t, raw, app, 60, "DELETE FROM acc WHERE 7 IN (SELECT 7)")
	wantRowSecurityRefusal(t, "two-statement DELETE under a SELECT-hiding policy", derr, n, left)
}

// Not over-refused: a table whose UPDATE and DELETE policies are the same (one FOR
// ALL policy, the usual multi-tenant layout; or the same USING for each command)
// takes the two statements, fenced as before; so does any table for a role row
// security does not apply to (the superuser's pool). And under an UPDATE-hiding
// policy, the one-statement DELETE (a plain condition, no UPDATE) and an INSERT run.
func TestTwoStepDeleteUnderSamePoliciesRuns(t *testing.T) {
	t.Run("for all", func(t *testing.T) {
		raw, app, _ := rowSecurityPools(t)
		if err := insertAs(app, 5, "DELETE FROM acc WHERE id IN (SELECT 7)"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("stale two-statement DELETE under one FOR ALL policy: %v; want ErrFenced", err)
		}
		wantDeleted(t, raw, app, "DELETE FROM acc WHERE id IN (SELECT 7)")
	})
	t.Run("per command, same using", func(t *testing.T) {
		raw, app, _ := rowSecurityPools(t,
			"CREATE POLICY rls_sel ON acc FOR SELECT USING ("+rlsShown+")",
			"CREATE POLICY rls_sel2 ON acc FOR SELECT USING (balance > 100)",
			"CREATE POLICY rls_del ON acc FOR DELETE USING ("+rlsShown+")",
			"CREATE POLICY rls_upd ON acc FOR UPDATE USING ("+rlsShown+")",
			"CREATE POLICY rls_ins ON acc FOR INSERT WITH CHECK (true)")
		wantDeleted(t, raw, app, "DELETE FROM acc WHERE id IN (SELECT 7)")
	})
	t.Run("superuser", func(t *testing.T) {
		raw, _, su := rowSecurityPools(t, updateHidden...)
		derr, n, left := deleteHidden(t, raw, su, 60, "DELETE FROM acc WHERE id IN (SELECT 7)")
		if derr != nil || n != 1 || left != 0 {
			t.Fatalf("superuser's two-statement DELETE: %v, %d rows, %d left; want 1 row deleted", derr, n, left)
		}
	})
	t.Run("one statement", func(t *testing.T) {
		raw, app, _ := rowSecurityPools(t, updateHidden...)
		if derr, n, left := deleteHidden(t, raw, app, 5, "DELETE FROM acc WHERE id = 7"); !errors.Is(derr, fencedsql.ErrFenced) || left != 1 {
			t.Fatalf("stale one-statement DELETE under an UPDATE-hiding policy: %v, %d rows, %d left; want ErrFenced", derr, n, left)
		}
		if derr, n, left := deleteHidden(t, raw, app, 60, "DELETE FROM acc WHERE id = 7"); derr != nil || n != 1 || left != 0 {
			t.Fatalf("one-statement DELETE under an UPDATE-hiding policy: %v, %d rows, %d left; want 1 row deleted", derr, n, left)
		}
		if err := insertAs(app, 60, "INSERT INTO acc (id, balance) VALUES (8, 1)"); err != nil {
			t.Fatalf("INSERT under an UPDATE-hiding policy: %v", err)
		}
	})
}

// wantDeleted runs query (a DELETE of key 7) under token 60 through app and wants the
// row deleted.
func wantDeleted(t *testing.T, raw, app *sql.DB, query string) {
	t.Helper()
	res, err := app.ExecContext(fencedsql.WithToken(context.Background(), 60), query)
	var n int64
	if err == nil {
		n, _ = res.RowsAffected()
	}
	var left int
	if qerr := raw.QueryRow("SELECT count(*) FROM acc WHERE id = 7").Scan(&left); qerr != nil {
		t.Fatal(qerr)
	}
	if err != nil || n != 1 || left != 0 {
		t.Fatalf("%s (token 60): %v, %d rows, %d left; want 1 row deleted", query, err, n, left)
	}
}

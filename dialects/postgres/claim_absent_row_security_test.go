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

// rlsOwnerRole owns acc and its guards in ownerRowSecurityLayout: a non-superuser,
// NOLOGIN role, created once in the cluster and reused (as rlsRole, the application
// role of the layout); each test drops what it owns in the test's database.
const rlsOwnerRole = "fsql_rls_owner"

// ownerRowSecurityLayout builds the least-privilege layout of docs/design.md: acc and
// its guards created by rlsOwnerRole (schema.Check's Fix run as it, so the absence
// recorder is SECURITY DEFINER as that owner), row 7 at token 10, rlsRole with SELECT,
// INSERT, UPDATE, DELETE on acc. Row security is enabled on acc (forced on the owner
// when force) with the policies given. It returns the owner's fenced pool, the
// application role's fenced pool, a superuser raw pool and the test database's DSN.
func ownerRowSecurityLayout(t *testing.T, force bool, policies ...string) (own, app, raw *sql.DB, dsn string) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = rawWith(t, dsn,
		"DO $$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '"+rlsOwnerRole+"') THEN CREATE ROLE "+rlsOwnerRole+" NOLOGIN; END IF; "+
			"IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '"+rlsRole+"') THEN CREATE ROLE "+rlsRole+" NOLOGIN; END IF; END$$",
		"GRANT USAGE, CREATE ON SCHEMA public TO "+rlsOwnerRole,
		"GRANT USAGE ON SCHEMA public TO "+rlsRole)
	t.Cleanup(func() { raw.Exec("DROP OWNED BY " + rlsOwnerRole + ", " + rlsRole + " CASCADE") }) //nolint:errcheck
	odsn := dsn + "&options=-c%20role%3D" + rlsOwnerRole
	ownRaw := rawWith(t, odsn,
		"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	var who string
	if err := ownRaw.QueryRow("SELECT current_user").Scan(&who); err != nil || who != rlsOwnerRole {
		t.Fatalf("owner pool runs as %q: %v", who, err)
	}
	checkAcc(t, ownRaw, odsn)
	own = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc&role="+rlsOwnerRole)
	if err := insertAs(own, 10, "INSERT INTO acc (id, balance) VALUES (7, 1)"); err != nil {
		t.Fatal(err)
	}
	stmts := []string{"GRANT SELECT, INSERT, UPDATE, DELETE ON acc TO " + rlsRole, "ALTER TABLE acc ENABLE ROW LEVEL SECURITY"}
	if force {
		stmts = append(stmts, "ALTER TABLE acc FORCE ROW LEVEL SECURITY")
	}
	for _, q := range append(stmts, policies...) {
		if _, err := ownRaw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	app = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc&role="+rlsRole)
	return own, app, raw, dsn
}

// claimWithHide runs the claim query (one row's id, or none) under tok in a
// transaction of db that set fsql_rls.hide to hide, and returns the claim's error (or
// Commit's).
func claimWithHide(t *testing.T, db *sql.DB, tok uint64, hide, query string, args ...any) error {
	t.Helper()
	ctx := fencedsql.WithToken(context.Background(), tok)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "SELECT pg_catalog.set_config('fsql_rls.hide', $1, true)", hide); err != nil {
		t.Fatalf("set_config: %v", err)
	}
	var id int64
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&id); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return tx.Commit()
}

// wantClaimRowSecurityRefusal fails t unless err is ErrUnsupported naming row security and
// not the retryable claim conflict.
func wantClaimRowSecurityRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrClaimConflict) || !strings.Contains(err.Error(), "row-level security") {
		t.Fatalf("%s: %v; want ErrUnsupported naming row-level security (not the retryable claim conflict)", what, err)
	}
}

// TestAbsentClaimOfPolicyHiddenRowUnsupported (red-team rt48h F1): row security
// enabled, not forced, in the least-privilege layout (the owner's recorder sees every
// row). A claim of key 7 (at token 10) whose policy hides row 7 from the claimer —
// from every command, or only from UPDATE, which FOR UPDATE and the fencing stamp
// obey — stamps nothing and is taken for the claim of an absent key; the recorder
// finds the row. That was ErrClaimConflict ("a concurrent transaction wrote the key …
// retry"), and every retry failed the same way: with row security in force for the
// pool's role, it is ErrUnsupported naming row security, nothing written.
func TestAbsentClaimOfPolicyHiddenRowUnsupported(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies []string
	}{
		{"hidden from every command", []string{"CREATE POLICY rls_all ON acc USING (" + rlsShown + ")"}},
		{"hidden from UPDATE only", updateHidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, app, raw, _ := ownerRowSecurityLayout(t, false, tc.policies...)
			for _, tok := range []uint64{60, 61} { // a retry fails the same way
				wantClaimRowSecurityRefusal(t, "claim of key 7 hidden by a policy", claimWithHide(t, app, tok, "on", "SELECT id FROM acc WHERE id = 7 FOR UPDATE"))
			}
			wantClaimRowSecurityRefusal(t, "key-probe claim of key 7 hidden by a policy",
				claimWithHide(t, app, 62, "on", "SELECT id FROM acc WHERE id = 7 AND balance >= 0 FOR UPDATE"))
			var tok, tombs int64
			if err := raw.QueryRow("SELECT fence_token, (SELECT count(*) FROM fencedsql_tomb_acc) FROM acc WHERE id = 7").Scan(&tok, &tombs); err != nil || tok != 10 || tombs != 0 {
				t.Fatalf("row 7 at token %d, %d tombstones, %v; want untouched (10), none", tok, tombs, err)
			}
		})
	}
}

// TestAbsentClaimUnderForcedRowSecurityRefused (red-team rt48h F2, fail-open): FORCE
// ROW LEVEL SECURITY in the least-privilege layout puts the recorder's owner under the
// policies, so its conflict lookup was filtered too: a claim of row 7 (token 10)
// hidden from the claimer recorded a tombstone at 60 beside the live row, and an older
// holder's UPDATE of key 7 then landed after the claim committed. The recorder (v5)
// refuses to record when row security is in force for its owner: every spelling
// reaching it (FOR UPDATE, FOR NO KEY UPDATE, the key probe of a claim with another
// conjunct; a tenant policy, or one for the application role only, which leaves the
// forced owner no row) is ErrUnsupported naming row security, nothing recorded.
func TestAbsentClaimUnderForcedRowSecurityRefused(t *testing.T) {
	tenant := "CREATE POLICY rls_tenant ON acc USING (" + rlsShown + ")"
	for _, tc := range []struct{ name, policy, claim string }{
		{"tenant policy", tenant, "SELECT id FROM acc WHERE id = 7 FOR UPDATE"},
		{"policy for the application role only", "CREATE POLICY rls_app_only ON acc TO " + rlsRole + " USING (" + rlsShown + ")", "SELECT id FROM acc WHERE id = 7 FOR UPDATE"},
		{"key probe", tenant, "SELECT id FROM acc WHERE id = 7 AND balance >= 0 FOR UPDATE"},
		{"FOR NO KEY UPDATE", tenant, "SELECT id FROM acc WHERE id = 7 FOR NO KEY UPDATE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, app, raw, _ := ownerRowSecurityLayout(t, true, tc.policy)
			wantClaimRowSecurityRefusal(t, "claim of key 7 hidden by a forced policy", claimWithHide(t, app, 60, "on", tc.claim))
			var tombs int64
			if err := raw.QueryRow("SELECT count(*) FROM fencedsql_tomb_acc").Scan(&tombs); err != nil || tombs != 0 {
				t.Fatalf("%d tombstones after the refused claim, %v; want none", tombs, err)
			}
		})
	}
}

// TestAbsentClaimOwnKeysUnderTenantPolicy: the common FOR ALL tenant policy keeps
// working for claims of the keys it shows the claimer. Not forced: a present key's
// claim stamps it, an absent key's claim records it (an older holder's INSERT of it is
// then ErrFenced). Forced on a non-superuser owner: the present key's claim still
// stamps it; an absent key's claim is refused (the recorder cannot see every row),
// nothing recorded.
func TestAbsentClaimOwnKeysUnderTenantPolicy(t *testing.T) {
	for _, force := range []bool{false, true} {
		name := "not forced"
		if force {
			name = "forced"
		}
		t.Run(name, func(t *testing.T) {
			_, app, raw, _ := ownerRowSecurityLayout(t, force, "CREATE POLICY rls_tenant ON acc USING ("+rlsShown+")")
			if err := claimWithHide(t, app, 60, "off", "SELECT id FROM acc WHERE id = 7 FOR UPDATE"); err != nil {
				t.Fatalf("claim of the shown key 7: %v", err)
			}
			var tok int64
			if err := raw.QueryRow("SELECT fence_token FROM acc WHERE id = 7").Scan(&tok); err != nil || tok != 60 {
				t.Fatalf("row 7 at token %d, %v; want stamped 60", tok, err)
			}
			err := claimWithHide(t, app, 60, "off", "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 8)
			if force {
				wantClaimRowSecurityRefusal(t, "claim of the absent key 8, forced", err)
				return
			}
			if err != nil {
				t.Fatalf("claim of the absent key 8: %v", err)
			}
			if err := insertAs(app, 40, "INSERT INTO acc (id) VALUES (8)"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("older holder's INSERT of the claimed key 8: %v, want ErrFenced", err)
			}
		})
	}
}

// TestForcedRowSecurityDeletedKeyStaysDeleted: in the forced layout, a key deleted
// under 60 stays deleted for the application role's stale INSERT and upsert under 40,
// whether the policy hides rows (its own WITH CHECK refuses the new row, 42501, as it
// would unwrapped) or shows them (the tombstone refuses it: ErrFenced).
func TestForcedRowSecurityDeletedKeyStaysDeleted(t *testing.T) {
	own, app, raw, _ := ownerRowSecurityLayout(t, true, "CREATE POLICY rls_tenant ON acc USING ("+rlsShown+")")
	if err := insertAs(own, 60, "DELETE FROM acc WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"INSERT INTO acc (id, balance) VALUES (7, 5)",
		"INSERT INTO acc (id, balance) VALUES (7, 5) ON CONFLICT (id) DO UPDATE SET balance = 5",
	} {
		for _, hide := range []string{"on", "off"} {
			ctx := fencedsql.WithToken(context.Background(), 40)
			tx, err := app.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "SELECT pg_catalog.set_config('fsql_rls.hide', $1, true)", hide); err != nil {
				t.Fatal(err)
			}
			_, ierr := tx.ExecContext(ctx, q)
			if ierr == nil {
				ierr = tx.Commit()
			}
			tx.Rollback() //nolint:errcheck
			var n int
			if err := raw.QueryRow("SELECT count(*) FROM acc WHERE id = 7").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 || ierr == nil || (hide == "off" && !errors.Is(ierr, fencedsql.ErrFenced)) {
				t.Fatalf("%s (hide=%s) under 40 after DELETE under 60: %v, %d rows", q, hide, ierr, n)
			}
		}
	}
}

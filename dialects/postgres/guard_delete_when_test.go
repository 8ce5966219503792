package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The row guard's DELETE trigger condition compares the one-statement DELETE's
// statement mark NULL-safely (red-team rt59b F1): in a session where the token setting
// is defined (an earlier transaction set it, and it reads ” since) and the statement
// setting never was, the condition reached the token's cast and every DELETE the guard
// judges — the protocol's own fencing UPDATE then DELETE — failed with a raw 22P02.
func TestGuardDeleteWithoutStatementMarkAccepted(t *testing.T) {
	raw, _ := absentAcc(t)
	testdb.Exec(t, raw, "INSERT INTO acc (id, fence_token, version) VALUES (9, 30, 1)")
	ctx := context.Background()
	c, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{"BEGIN", "SET LOCAL fencedsql_guard.delete_token = '1000'", "COMMIT",
		"BEGIN", "UPDATE acc SET fence_token = 30, version = version + 1 WHERE id = 9", "DELETE FROM acc WHERE id = 9", "COMMIT"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			c.ExecContext(ctx, "ROLLBACK") //nolint:errcheck
			t.Fatalf("%s, in a session whose delete_token an earlier transaction set: %v (want it through, as in a fresh session)", q, err)
		}
	}
	// a plain DELETE of a row this transaction did not fence is still the guard's typed refusal
	testdb.Exec(t, raw, "INSERT INTO acc (id, fence_token, version) VALUES (10, 30, 1)")
	if _, err := c.ExecContext(ctx, "DELETE FROM acc WHERE id = 10"); !postgres.IsGuardError(err) {
		t.Errorf("plain DELETE in that session: %v, want the guard's refusal (FNCD1)", err)
	}
}

// A session that arrives with a setting of the guards' reserved prefix — from the
// DSN's options, or the database's defaults — is refused with a
// *SessionError (errors.Is ErrSchema) before a guarded write (red-team rt59b F1: the
// pool took it, and the token setting defined empty failed the guard's condition).
func TestReservedSettingArrivingWithSessionRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"INSERT INTO acc (id) VALUES (9)")
	checkAcc(t, raw, dsn)
	ctx := fencedsql.WithToken(context.Background(), 90)
	write := func(t *testing.T, dsn string) error {
		t.Helper()
		db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=acc")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, "DELETE FROM acc WHERE id IN (SELECT 9)")
		return err
	}
	for name, extra := range map[string]string{
		"options":      "&options=" + strings.NewReplacer(" ", "%20", "=", "%3D").Replace("-c fencedsql_guard.delete_token="),
		"options case": "&options=" + strings.NewReplacer(" ", "%20", "=", "%3D").Replace("-c FencedSQL_Guard.tx_token=5"),
	} {
		t.Run(name, func(t *testing.T) {
			err := write(t, dsn+extra)
			var se *fencedsql.SessionError
			if !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(se.Setting, "fencedsql_guard.") {
				t.Errorf("guarded DELETE on a session with a reserved setting from the DSN: %v, want a *SessionError on fencedsql_guard.*", err)
			}
		})
	}
	t.Run("database default", func(t *testing.T) {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		db := strings.TrimPrefix(u.Path, "/")
		testdb.Exec(t, raw, `ALTER DATABASE "`+db+`" SET fencedsql_guard.delete_token = ''`)
		defer testdb.Exec(t, raw, `ALTER DATABASE "`+db+`" RESET fencedsql_guard.delete_token`)
		var se *fencedsql.SessionError
		if err := write(t, dsn); !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) {
			t.Errorf("guarded DELETE on a session whose database's defaults set a reserved setting: %v, want a *SessionError", err)
		}
	})
	if err := write(t, dsn); err != nil {
		t.Errorf("the same DELETE on a session without: %v", err)
	}
}

// TestGuardDeleteWhenUpgradedFromPrevious: a guard DELETE trigger of the release before
// rt59b F1 (the statement setting compared bare) is the guard's own to the side-door
// checks (acc beside it reports nothing, writes go on), schema.Check reports it not
// installed with a Fix, and after the Fix reports nothing.
func TestGuardDeleteWhenUpgradedFromPrevious(t *testing.T) {
	raw, db := absentAcc(t)
	testdb.Exec(t, raw, postgres.PreviousGuardDeleteTriggerDDL(dialect.TableName{Schema: "public", Name: "pair"}, "fence_token")...)
	upgradedPairChecked(t, raw, "pair's previous DELETE trigger", func() {
		for _, q := range []string{
			`INSERT INTO pair ("Region", n) VALUES ('eu', 1)`,
			`DELETE FROM pair WHERE "Region" = 'eu' AND n = 1`,
			`INSERT INTO pair ("Region", n) VALUES ('eu', 2)`,
			`DELETE FROM pair WHERE n IN (SELECT 2)`,
		} {
			if err := insertAs(db, 60, q); err != nil {
				t.Errorf("%s under token 60 over the previous DELETE trigger: %v, want it through", q, err)
			}
		}
	})
}

package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// floorBodyCase is a statement that spells a write of the token floor in a body
// (a routine's, a DO block's) the planner must read as the server does, on a pool with
// fenced_allow=allow; call runs what it created ("" for none); controls are spellings
// the checks read plainly.
type floorBodyCase struct {
	name, allow, create, call string
	controls                  []string
}

// requireFloorBodiesRefused runs each case over a guarded table whose floor is 50: the
// controls, then the case, must be refused with ErrUnsupported; if the case is not, it
// reports whether the floor was lowered and a write under token 40 then accepted.
func requireFloorBodiesRefused(t *testing.T, cases []floorBodyCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx := context.Background()
			raw := testdb.Open(t, "pgx", dsn, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
			testdb.Exec(t, raw, postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
			testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
			if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
				t.Fatal(err)
			}
			db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts&fenced_allow="+c.allow))
			for _, q := range c.controls {
				if _, err := db.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("control %q: %v, want ErrUnsupported", q, err)
				}
			}
			if _, err := db.ExecContext(ctx, c.create); err != nil {
				if !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("err = %v, want ErrUnsupported (the decoded literal names the floor)", err)
				}
				return
			}
			if c.call != "" {
				if _, err := db.ExecContext(ctx, c.call); err != nil {
					t.Fatalf("call refused after the function was created: %v; want the CREATE refused", err)
				}
			}
			var floor int64
			_ = raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor)
			_, werr := db.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id = 1")
			t.Errorf("with fenced_allow=%s, %q went through the fenced pool: floor now %d (was 50); a write under token 40: err = %v", c.allow, c.create, floor, werr)
		})
	}
}

// foreignFloorSetup: accounts with the guard (one row, token 5), the floor raised
// to 50, the postgres_fdw extension installed by the administrator (as it would be for
// an application that reads another database), and a fenced pool on the naive layout
// (the application's account owns what the guards' installer created: here the test's
// account for both). It returns the raw and fenced pools and the loopback server's
// OPTIONS.
func foreignFloorSetup(t *testing.T) (ctx context.Context, raw, db *sql.DB, server string) {
	t.Helper()
	dsn := testdb.Postgres(t)
	ctx = context.Background()
	raw = testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE EXTENSION postgres_fdw")
	g := postgres.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	server = fmt.Sprintf("host '%s', port '%s', dbname '%s'", u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"))
	db, err = sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		"CREATE SERVER rt20t_loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (" + server + ")",
		fmt.Sprintf("CREATE USER MAPPING FOR CURRENT_USER SERVER rt20t_loop OPTIONS (user '%s', password '%s')", u.User.Username(), pw),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("through the fenced pool: %v", err)
		}
	}
	return ctx, raw, db, server
}

// TestForeignTableOverFloorRefused (fail-open; naive layout, postgres_fdw
// installed). The wrapper refuses a CREATE FOREIGN TABLE whose table_name option names
// a reserved object when the option is a plain string ('fencedsql_floor', also split
// into adjacent literals or upper-cased), but not when the same string is spelled as a
// Unicode-escape literal with its own escape character (U&'fenced!0073ql_floor'
// UESCAPE '!', which decodeLoose does not decode: it knows only the backslash) or as a
// dollar-quoted string ($$fencedsql_floor$$, which the prefix check treats as a code
// body and lexes as SQL instead of reading it as a name). Neither needs WithDDL. The
// foreign table is then written through the fenced pool under a name without the
// prefix: an UPDATE sets the token floor to 0 (the floor's sync trigger copies it into
// the sequence), a TRUNCATE empties the floor table (no floor at all); either way a
// write under token 40 with the floor at 50 is accepted. The loopback connection is
// postgres_fdw's own, like dblink's, which the wrapper refuses for that reason
// (sqlTextFuncs); "writes through imported tables are fenced by name" (docs/design.md
// §5, "Not refused") holds for guarded tables, not for the floor and tombstone tables.
//
// Right behaviour: a statement through a pool with guarded tables that names a
// reserved object in any string spelling — U&'…' with or without UESCAPE, E'…',
// dollar-quoted, adjacent literals — is refused like the plain spelling (decode the
// literal as the server does before the prefix test); better, refuse CREATE/ALTER
// FOREIGN TABLE and IMPORT FOREIGN SCHEMA whose remote name cannot be read, as dblink is.
func TestForeignTableOverFloorRefused(t *testing.T) {
	for _, c := range []struct{ name, spelling, write string }{
		{"uescape/update", "U&'fenced!0073ql_floor' UESCAPE '!'", "UPDATE rt20t_floor SET floor = 0"},
		{"dollar/update", "$$fencedsql_floor$$", "UPDATE rt20t_floor SET floor = 0"},
		{"dollar/truncate", "$t$fencedsql_floor$t$", "TRUNCATE rt20t_floor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, raw, db, _ := foreignFloorSetup(t)
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id = 1"); err == nil {
				t.Fatal("control: a write under 40 passed the floor 50")
			}
			create := "CREATE FOREIGN TABLE rt20t_floor (id int, floor bigint) SERVER rt20t_loop OPTIONS (table_name " + c.spelling + ")"
			if _, err := db.ExecContext(ctx, create); err != nil {
				floorWriteRefused(t, err)
				return
			}
			if _, err := db.ExecContext(ctx, c.write); err != nil {
				t.Fatalf("%s refused after the foreign table was created: %v; want the CREATE refused", c.write, err)
			}
			var floor sql.NullInt64
			_ = raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor)
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id = 1")
			if err == nil {
				var tok int64
				_ = raw.QueryRowContext(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&tok)
				t.Errorf("through the fenced pool: %q then %q (floor table now %v); a write under token 40 below the floor 50 was then accepted (row token %d)", create, c.write, floor, tok)
			}
		})
	}
}

// TestDynamicUescapeBodyLoweringFloorRefused (fail-open under WithDDL or WithDynamicSQL;
// naive layout). docs/design.md §5: the protect checks "apply to the statements in the
// string literals and dollar-quoted bodies of a statement whose strings are code — DO,
// CREATE/ALTER (routine bodies) … so that WithDDL/WithDynamicSQL do not let DO $$ BEGIN
// UPDATE pg_proc … $$ … through"; only "a body built at run time" is not seen. A body
// written as a Unicode-escape literal with its own escape character — U&'…' UESCAPE '!'
// — is a literal, not built at run time, but the body check does not decode it (the
// plain, E'…' and U&'\…' spellings of the same body are refused). Under WithDDL a SQL
// function whose body is `UPDATE fenced!0073ql_floor SET floor = 0` is created and
// called through the fenced pool; under WithDynamicSQL a DO block does the same. The
// floor goes to 0 and a write under token 40 with the floor at 50 is accepted.
//
// Right behaviour: decode every string form the server decodes (U&'…' with UESCAPE,
// E'…', dollar quotes, adjacent literals) before the body checks, or refuse a body in a
// form the checks cannot read, as a body built at run time would be with dynamic SQL off.
func TestDynamicUescapeBodyLoweringFloorRefused(t *testing.T) {
	const lower = "UPDATE fenced!0073ql_floor SET floor = 0 WHERE id = 1"
	const plain = "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
	requireFloorBodiesRefused(t, []floorBodyCase{
		{name: "ddl", allow: "ddl", create: "CREATE FUNCTION rt20t_f() RETURNS void LANGUAGE sql AS U&'" + lower + "' UESCAPE '!'", call: "SELECT rt20t_f()",
			controls: []string{"CREATE FUNCTION rt20t_f() RETURNS void LANGUAGE sql AS '" + plain + "'"}},
		{name: "dynamic_sql", allow: "dynamic_sql", create: "DO U&'BEGIN " + lower + "; END' UESCAPE '!'",
			controls: []string{"DO 'BEGIN " + plain + "; END'"}},
	})
}

// floorWriteRefused requires err, the answer to a statement whose literal spells a write of
// the floor in a form the checks must decode, to be the planner's refusal.
func floorWriteRefused(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported (the decoded literal names the floor)", err)
	}
}

// TestDynamicUescapeSpellingsLoweringFloorRefused (fail-open under WithDDL or
// WithDynamicSQL; naive layout). The last commit decodes U&'…' UESCAPE 'c' before the
// body checks, but only when the token right after the U&'…' is UESCAPE and the one
// after it is a three-character 'c' (protect_literal.go uescape). PostgreSQL reads more
// spellings of the same constant literal, none built at run time:
//
//   - continuation: U&'…'⏎'…' UESCAPE '!' is ONE Unicode-escape literal, and the escape
//     character applies to every part (the wrapper sees U&'…' followed by a plain
//     '…', decodes neither with '!');
//   - the escape string itself continued: UESCAPE ”⏎'!' is the escape '!';
//   - a U&'…' UESCAPE '!' literal nested in a dollar-quoted body (DO $$ … EXECUTE
//     U&'…' UESCAPE '!' … $$), and a U&"…" UESCAPE '!' identifier in a body: the
//     nested body is lexed, but no UESCAPE is applied to it (the top-level U&"…"
//     UESCAPE identifier is refused);
//   - at that nested depth even without UESCAPE: EXECUTE U&'… fenced\0073ql_floor …'
//     (the default escape, decoded at the top level) and EXECUTE 'UPDATE fenced'⏎
//     'sql_floor …' (a continued literal, joined at the top level) pass.
//
// Each writes fencedsql_floor (spelled fenced!0073ql_floor) through the fenced pool:
// the floor goes from 50 to 0 and a write under token 40 is then accepted.
//
// Right behaviour: read a U&'…'/U&"…" literal as PostgreSQL's lexer does — joined with
// its continuations, with the UESCAPE string joined with its own — at every nesting
// depth the body checks descend to; or refuse a body that holds UESCAPE at all.
func TestDynamicUescapeSpellingsLoweringFloorRefused(t *testing.T) {
	const lower = "UPDATE fenced!0073ql_floor SET floor = 0 WHERE id = 1"
	dynamic := []string{"DO U&'BEGIN " + lower + "; END' UESCAPE '!'"}
	ddl := []string{"CREATE FUNCTION rt21b_g() RETURNS void LANGUAGE sql AS U&'" + lower + "' UESCAPE '!'"}
	requireFloorBodiesRefused(t, []floorBodyCase{
		{"ddl-escape-continued", "ddl", "CREATE FUNCTION rt21b_f() RETURNS void LANGUAGE sql AS U&'" + lower + "' UESCAPE ''\n'!'", "SELECT rt21b_f()", ddl},
		{"do-body-continued", "dynamic_sql", "DO U&'BEGIN UPDATE fenced'\n'!0073ql_floor SET floor = 0 WHERE id = 1; END' UESCAPE '!'", "", dynamic},
		{"do-nested-execute", "dynamic_sql", "DO $rt$BEGIN EXECUTE U&'" + lower + "' UESCAPE '!'; END$rt$", "", dynamic},
		{"do-nested-identifier", "dynamic_sql", "DO $rt$BEGIN UPDATE U&\"fenced!0073ql_floor\" UESCAPE '!' SET floor = 0 WHERE id = 1; END$rt$", "", dynamic},
		{"do-nested-default-escape", "dynamic_sql", "DO $rt$BEGIN EXECUTE U&'UPDATE fenced\\0073ql_floor SET floor = 0 WHERE id = 1'; END$rt$", "", dynamic},
		{"do-nested-continued", "dynamic_sql", "DO $rt$BEGIN EXECUTE 'UPDATE fenced'\n'sql_floor SET floor = 0 WHERE id = 1'; END$rt$", "", dynamic},
	})
}

package mysql_test

// Red-team rt22a: the planner's literal checks (plan/protect_literal.go,
// protect_strings.go) on MariaDB 10.11.

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rt22aWide spells s as a MySQL string literal whose bytes are s in UTF-16 (big-endian,
// le: little-endian) or UTF-32 (width 4), each NUL byte written as the escape \0.
func rt22aWide(s string, width int, le bool) string {
	var b strings.Builder
	for _, c := range s {
		if le {
			b.WriteRune(c)
			b.WriteString(strings.Repeat(`\0`, width-1))
			continue
		}
		b.WriteString(strings.Repeat(`\0`, width-1))
		b.WriteRune(c)
	}
	return "'" + b.String() + "'"
}

func rt22aSetup(t *testing.T, ctx context.Context, setup ...string) (raw, fenced *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw = testdb.Open(t, "mysql", dsn, append([]string{
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1)"}, setup...)...)
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	fenced = testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=ddl,dynamic_sql")
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	return raw, fenced
}

// TestRTrt22aFloorLoweredThroughIntroducedString (fail-open under WithDynamicSQL).
// rt21b F1 was fixed for hexadecimal literals only: literalText decodes an introducer's
// wide character set (_utf16, _utf16le, _ucs2, _utf32) in its X'…'/0x… branches. The
// same introducer on a quoted string — _utf16'\0U\0P\0D…', NULs written \0 — is the
// UTF-16 text "UPDATE …" to MariaDB, and the bytes "\x00U\x00P…" (no reserved prefix)
// to the planner. EXECUTE IMMEDIATE / PREPARE of it lowers fencedsql_floor to 0 through
// the fenced pool, and a write under token 40 with the floor at 50 is accepted.
//
// Right behaviour: refused with ErrUnsupported, as the same body in a plain string or
// in _utf16 X'…' is (decode every introduced literal in its character set, or refuse a
// code literal whose introducer is not ASCII-compatible).
func TestRTrt22aFloorLoweredThroughIntroducedString(t *testing.T) {
	const lower = "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
	for _, c := range []struct{ name, q, then string }{
		{"utf16-string", "EXECUTE IMMEDIATE _utf16" + rt22aWide(lower, 2, false), ""},
		{"utf16le-string", "EXECUTE IMMEDIATE _utf16le" + rt22aWide(lower, 2, true), ""},
		{"utf32-prepare", "PREPARE rt22a FROM _utf32" + rt22aWide(lower, 4, false), "EXECUTE rt22a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			raw, fenced := rt22aSetup(t, ctx)
			conn, err := fenced.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			control := "EXECUTE IMMEDIATE '" + lower + "'"
			if _, err := conn.ExecContext(ctx, control); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("control %q: %v, want ErrUnsupported", control, err)
			}
			if _, err := conn.ExecContext(ctx, c.q); err != nil {
				if !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("err = %v, want ErrUnsupported", err)
				}
				return
			}
			if c.then != "" {
				if _, err := conn.ExecContext(ctx, c.then); err != nil {
					t.Fatalf("%s: %v", c.then, err)
				}
			}
			var floor int64
			_ = raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor)
			_, werr := conn.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id = 1")
			t.Errorf("%.50s… went through the fenced pool: floor now %d (was 50); write under token 40: err = %v", c.q, floor, werr)
		})
	}
}

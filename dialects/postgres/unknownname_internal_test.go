package postgres

import (
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/jackc/pgx/v5/pgconn"
)

// Classify reads the name of an undefined column or table (42703, 42P01) from the
// server's message (schemagone.go).
func TestClassifyUnknownName(t *testing.T) {
	for _, c := range []struct{ code, msg, col, table string }{
		{"42703", `column "fence_token" does not exist`, "fence_token", ""},
		{"42703", `column "version" of relation "acc" does not exist`, "version", ""},
		{"42703", `column acc.fence_token does not exist`, "acc.fence_token", ""},
		{"42P01", `relation "public.fencedsql_floor" does not exist`, "", "public.fencedsql_floor"},
		{"42P01", `missing FROM-clause entry for table "x"`, "", ""},
	} {
		err := &pgconn.PgError{Code: c.code, Message: c.msg}
		info := Dialect.Classify(fmt.Errorf("wrapped: %w", err))
		if info.Kind != dialect.ErrorUnknownName || info.Column != c.col || info.Table != c.table {
			t.Errorf("%s %q: %+v; want column %q table %q", c.code, c.msg, info, c.col, c.table)
		}
	}
}

package postgres_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestServerIdentitySameWhateverSession: the server's identity read with the name
// resolution (dialect.ServerIdentifier, docs/design.md G14) is the same text on every
// connection to one server whatever the session's TimeZone, DateStyle and
// extra_float_digits (a pool whose connections differed there would take each for
// another server and read its records again at every write).
func TestServerIdentitySameWhateverSession(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn)
	ctx := context.Background()
	q := postgres.Dialect.(dialect.ServerIdentifier).NamePathQuery()
	read := func(settings ...string) string {
		t.Helper()
		c, err := raw.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, s := range settings {
			if _, err := c.ExecContext(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		var path, id string
		if err := c.QueryRowContext(ctx, q).Scan(&path, &id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	base := read()
	if len(base) < 21 {
		t.Fatalf("identity %q: want the postmaster's start time to the microsecond and the port", base)
	}
	if other := read("SET TimeZone = 'Asia/Tokyo'", "SET DateStyle = 'SQL, DMY'", "SET extra_float_digits = -15", "SET IntervalStyle = 'sql_standard'"); other != base {
		t.Errorf("identity under other session settings %q, want %q", other, base)
	}
}

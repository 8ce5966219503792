package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// floorLiteralCase is a statement that spells a write of the token floor in a literal
// form the planner must read as the server does, and the statement that runs what it
// prepared ("" for none).
type floorLiteralCase struct{ name, q, then string }

// requireFloorLiteralsRefused runs each case on a fenced connection with
// fenced_allow=dynamic_sql over a guarded table whose floor is 50, after the controls
// (spellings the checks read plainly, which must be refused): each case must be
// refused with ErrUnsupported; if one is not, it reports whether the floor was lowered
// and a write under token 40 then accepted.
func requireFloorLiteralsRefused(t *testing.T, controls []string, cases []floorLiteralCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			dsn := testdb.MySQL(t)
			raw := testdb.Open(t, "mysql", dsn,
				"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1)")
			testdb.Exec(t, raw, mysql.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
			if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
				t.Fatal(err)
			}
			fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=dynamic_sql")
			conn, err := fenced.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range controls {
				if _, err := conn.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("control %q: %v, want ErrUnsupported", q, err)
				}
			}
			if _, err := conn.ExecContext(ctx, c.q); err != nil {
				if !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("err = %v, want ErrUnsupported (the decoded literal names the floor)", err)
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
			t.Errorf("%.60s… went through the fenced pool (WithDynamicSQL): floor now %d (was 50); a write under token 40: err = %v", c.q, floor, werr)
		})
	}
}

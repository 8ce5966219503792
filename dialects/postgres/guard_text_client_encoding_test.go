// A client encoding the library's guard text does not survive (red-team rt52a F3).

package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestClientEncodingGuardText (red-team rt52a F3): the guard bodies hold non-ASCII
// characters (… and — in their comments), which the library reads back through the
// session's client encoding and compares with its UTF-8 text: under LATIN1 the read
// failed (22P05), under EUC_JP the query's parameter was invalid (22021), under
// WIN1252 the healthy guard read as changed and schema.Check's Fix, applied there,
// stored mis-decoded text. Now a client encoding other than UTF8 and SQL_ASCII is
// refused with a *SessionError on client_encoding (the pool's guarded writes) and a
// typed error (schema.Check), and no Fix is proposed.
func TestClientEncodingGuardText(t *testing.T) {
	for _, enc := range []string{"LATIN1", "WIN1252", "EUC_JP"} {
		t.Run(enc, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			setup := rawWith(t, dsn,
				"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
				"INSERT INTO acc (id) VALUES (1)")
			checkAcc(t, setup, dsn)
			setup.Close()
			encDSN := dsn + "&client_encoding=" + enc
			db := testdb.Open(t, "fenced-pgx", encDSN+"&fenced_tables=acc")
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET balance = 10 WHERE id = 1")
			var se *fencedsql.SessionError
			if err != nil && !(errors.As(err, &se) && strings.Contains(se.Setting, "client_encoding")) {
				t.Errorf("client_encoding %s (accepted by the session check): a healthy guarded table's write refused: %.400v", enc, err)
			}
			raw := rawWith(t, encDSN)
			reps, cerr := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
			if cerr != nil {
				if !cfgmTyped(cerr) {
					t.Errorf("schema.Check under %s: untyped %.300v", enc, cerr)
				}
				return
			}
			for _, r := range reps {
				if len(r.Fix) == 0 {
					continue
				}
				t.Errorf("schema.Check under %s reports the healthy guard as changed: %.300q", enc, r.Problems)
				// Apply the Fix as an operator would, then a UTF8 pool.
				for _, q := range r.Fix {
					if _, err := raw.ExecContext(ctx, q); err != nil {
						t.Logf("fix under %s: %.200v", enc, err)
						return
					}
				}
				u := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
				if _, err := u.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE acc SET balance = 20 WHERE id = 1"); err != nil {
					t.Errorf("after applying schema.Check's Fix under %s, a UTF8 pool refuses the table: %.300v", enc, err)
				}
			}
		})
	}
}

// The schema tool's session: a client_encoding that converts the names it sends
// (red-team rt56a F4).

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRegisterAndCheckFromOtherClientEncoding: from a session whose client_encoding is
// not UTF8 (LATIN1, WIN1252, EUC_JP), RegisterTables recorded a non-ASCII name as the
// server decoded its UTF-8 bytes ("cafÃ©" for "café", a name no table has, which every
// pool then guarded), and Check answered "no such table" for the existing table. Both
// now refuse the session with a *fencedsql.SessionError on client_encoding, and
// nothing is recorded.
func TestRegisterAndCheckFromOtherClientEncoding(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	rng := rand.New(rand.NewSource(5606))
	raw := rawWith(t, dsn)
	for trial, enc := range []string{"LATIN1", "WIN1252", "EUC_JP"} {
		name := longName(rng, fmt.Sprintf("café%d_", trial), 20+rng.Intn(30))
		name = strings.NewReplacer("😀", "é", "𝔸", "ß", "中", "é", "日", "ß").Replace(name) // representable in LATIN1
		testdb.Exec(t, raw, "CREATE TABLE "+longQ(name)+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
		inst := testdb.Open(t, "pgx", dsn+"&client_encoding="+enc)
		rerr := schema.RegisterTables(ctx, inst, postgres.Dialect, schema.GuardSpec{Table: name})
		reps, cerr := schema.Check(ctx, inst, postgres.Dialect, schema.GuardSpec{Table: name})
		inst.Close()
		var se *fencedsql.SessionError
		if !errors.As(rerr, &se) || se.Setting != "client_encoding" {
			t.Errorf("%s: RegisterTables(%q): %v; want a *SessionError on client_encoding", enc, name, rerr)
		}
		if !errors.As(cerr, &se) || se.Setting != "client_encoding" {
			t.Errorf("%s: schema.Check(%q): %v %q; want a *SessionError on client_encoding", enc, name, cerr, fencetest.ReportProblems(reps))
		}
		var n int
		if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM pg_catalog.pg_class WHERE relname = 'fencedsql_registry'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM fencedsql_registry").Scan(&n); err != nil || n != 0 {
				t.Errorf("%s: the registry holds %d row(s) after the refused RegisterTables (%v)", enc, n, err)
			}
		}
	}
}

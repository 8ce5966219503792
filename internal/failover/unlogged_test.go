package failover

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// pgUnloggedDB is pgDB with its table created UNLOGGED.
var pgUnloggedDB = DB{
	Dialect: postgres.Dialect, PlainDriver: "pgx", FencedDriver: postgres.DriverName,
	CreateTable: `CREATE UNLOGGED TABLE ` + Table + ` (id BIGINT PRIMARY KEY, holder TEXT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
	Upsert:    pgDB.Upsert,
	ReadToken: pgDB.ReadToken,
}

// An UNLOGGED guarded table is emptied by crash recovery: the tokens its rows held are
// forgotten, and a stale holder wrote again after a crash restart (a red-team pass;
// schema.Check said nothing). Installed as documented, schema.Check's fix makes it
// logged, and after a crash restart the stale write is still refused.
func TestUnloggedGuardedTableMadeLogged(t *testing.T) {
	env := needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pair, err := NewPostgres(ctx, env, Async)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })
	if _, err := Install(ctx, pair.DSN(), pgUnloggedDB); err != nil {
		t.Fatal(err)
	}
	var persistence string
	if err := pgDo(ctx, pair.DSN(), func(db *sql.DB) error {
		return db.QueryRowContext(ctx, "SELECT relpersistence::text FROM pg_class WHERE oid = to_regclass($1)", Table).Scan(&persistence)
	}); err != nil {
		t.Fatal(err)
	}
	if persistence != "p" {
		t.Errorf("after the documented install the guarded table's relpersistence is %q, want p (logged)", persistence)
	}

	write := func(tok uint64, id int64, holder string) error {
		db, err := sql.Open(pgUnloggedDB.FencedDriver, FencedDSN(pair.DSN()))
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(fencedsql.WithToken(ctx, tok), pgUnloggedDB.Upsert, id, holder)
		return err
	}
	if err := write(8, 1, "B"); err != nil {
		t.Fatalf("B's write under token 8: %v", err)
	}
	// The primary crashes and restarts (crash recovery; no failover, no floor hook).
	if err := pair.primary.srv.kill(); err != nil {
		t.Fatal(err)
	}
	// The killed backends may hold the old shared memory for a moment: retry the start.
	for i := 0; ; i++ {
		removeSysVShm(pair.primary.data())
		err := pair.start(ctx, pair.primary)
		if err == nil {
			break
		}
		if i == 20 {
			t.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := write(5, 1, "A"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("after a crash restart, A's stale write under token 5 of the row B wrote under 8: %v, want ErrFenced", err)
	}
}

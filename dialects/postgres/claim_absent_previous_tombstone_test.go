package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestAbsentClaimRefusedOverPreviousTombstoneFunction: guardObjects still accepts the
// previous version's tombstone function (now v11) so that a database not yet upgraded
// keeps its writes, but the recorder is judged with this version's tombstone function
// only (v9 read a key's tombstone without v10's FOR SHARE, so a claim of an absent key
// and a stale holder's uncommitted INSERT of it could both commit: red-team rt45b F5;
// rt46a). The pool refuses the claim of an absent key there (ErrUnsupported, naming the
// upgrade) and lets the other writes through; after the Fix the claim works.
func TestAbsentClaimRefusedOverPreviousTombstoneFunction(t *testing.T) {
	raw, db, dsn := absentAccDSN(t)
	key := []dialect.KeyColumn{{Name: "id", Type: "bigint"}}
	rawWith(t, dsn, postgres.PreviousTombstoneFunctionDDL(dialect.TableName{Schema: "public", Name: "acc"}, key, "fence_token"))
	var src string
	if err := raw.QueryRow("SELECT prosrc FROM pg_proc WHERE proname = 'fencedsql_tombstone_acc'").Scan(&src); err != nil || !strings.Contains(src, "fencedsql tombstone guard v11\n") {
		t.Fatalf("set-up: the previous tombstone function is not installed (%v)", err)
	}
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	cerr := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 7).Scan(&id)
	_ = tx.Rollback()
	if !errors.Is(cerr, fencedsql.ErrUnsupported) || !strings.Contains(cerr.Error(), "fencedsql-schema -apply") {
		t.Fatalf("claim of absent key 7 over the previous tombstone function: %v, want ErrUnsupported asking for the upgrade", cerr)
	}
	if err := insertAs(db, 60, "INSERT INTO acc (id) VALUES (8)"); err != nil {
		t.Fatalf("a plain INSERT over the previous tombstone function: %v, want it through", err)
	}
	probs, fix := accReport(t, raw)
	if len(probs) == 0 {
		t.Fatal("schema.Check reports nothing over the previous tombstone function: want it not installed")
	}
	rawWith(t, dsn, fix...)
	db2 := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc,pair")
	claimAbsent(t, db2, 60, true, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 7)
}

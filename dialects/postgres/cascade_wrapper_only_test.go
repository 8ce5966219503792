package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt65a F1: a table guarded by the wrapper alone (listed in fenced_tables, no
// database-side guard installed) with foreign keys to an unguarded table par whose
// actions change its rows (ON DELETE CASCADE / SET NULL / SET DEFAULT, ON UPDATE
// CASCADE / SET NULL). A write of par through the pool, with a stale token or none,
// deleted or rewrote acc's rows written under a newer token, and the pool's lazy check
// of acc counted the keys as notes ("the guard refuses it": there was none). Now each
// is a cascade door the lazy check refuses (ErrSchema, nothing written), as it does a
// user trigger on par doing the same write; a key with NO ACTION is none. Once the
// guard is installed (schema.Check's Fix), its triggers refuse the cascades and the
// keys are notes again: a new pool writes acc.
func TestCascadeIntoWrapperOnlyGuardedTableIsADoor(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE TABLE par (id bigint PRIMARY KEY)",
		"INSERT INTO par VALUES (0), (1), (3)",
		"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, p1 bigint DEFAULT 0, p2 bigint DEFAULT 0, p3 bigint DEFAULT 0, p4 bigint DEFAULT 0, p5 bigint DEFAULT 0, p6 bigint DEFAULT 0, "+
			"fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0, "+
			"CONSTRAINT k_del_cascade FOREIGN KEY (p1) REFERENCES par (id) ON DELETE CASCADE, "+
			"CONSTRAINT k_del_null FOREIGN KEY (p2) REFERENCES par (id) ON DELETE SET NULL, "+
			"CONSTRAINT k_del_default FOREIGN KEY (p3) REFERENCES par (id) ON DELETE SET DEFAULT, "+
			"CONSTRAINT k_upd_cascade FOREIGN KEY (p4) REFERENCES par (id) ON UPDATE CASCADE, "+
			"CONSTRAINT k_upd_null FOREIGN KEY (p5) REFERENCES par (id) ON UPDATE SET NULL, "+
			"CONSTRAINT k_no_action FOREIGN KEY (p6) REFERENCES par (id) ON DELETE NO ACTION ON UPDATE RESTRICT)",
		"INSERT INTO acc (id, balance, p1, p2, p3, p4, p5, p6, fence_token, version) VALUES (1, 5, 1, 1, 1, 1, 1, 0, 50, 7)")
	ctx := fencedsql.WithToken(context.Background(), 10)
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=acc"))
	_, err := db.ExecContext(ctx, "INSERT INTO acc (id) VALUES (3)")
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("guarded INSERT into the wrapper-only acc with cascading keys from par: %v, want ErrSchema (cascade doors)", err)
	}
	for _, k := range []string{"k_del_cascade", "k_del_null", "k_del_default", "k_upd_cascade", "k_upd_null"} {
		if !strings.Contains(err.Error(), "cascade "+k+" REFERENCES") {
			t.Errorf("the refusal does not name the cascade door %s: %v", k, err)
		}
	}
	if strings.Contains(err.Error(), "k_no_action") {
		t.Errorf("the refusal names the key with NO ACTION/RESTRICT: %v", err)
	}
	var n int
	if qerr := raw.QueryRow("SELECT count(*) FROM acc WHERE id = 3").Scan(&n); qerr != nil || n != 0 {
		t.Fatalf("the refused INSERT wrote: %d rows, %v", n, qerr)
	}
	// The guard installed: its triggers refuse the cascades, the keys are notes.
	checkAcc(t, raw, dsn)
	db2 := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=acc"))
	if _, err := db2.ExecContext(ctx, "INSERT INTO acc (id) VALUES (3)"); err != nil {
		t.Fatalf("guarded INSERT with the guard installed: %v, want it written (the cascades are notes)", err)
	}
	if _, err := db2.ExecContext(ctx, "DELETE FROM par WHERE id = 1"); err == nil {
		t.Errorf("DELETE of par's row 1 under token 10 with the guard installed: nil, want the guard's refusal of the cascade")
	}
	var p1 int64
	if qerr := raw.QueryRow("SELECT p1 FROM acc WHERE id = 1 AND fence_token = 50 AND version = 7").Scan(&p1); qerr != nil || p1 != 1 {
		t.Errorf("acc's row 1 (token 50) after the refused cascade: p1 %d, %v", p1, qerr)
	}
}

package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt27b: a second catalogue of hostile SQL against the fenced MariaDB 10.11 pool.

// mariaPool makes accounts (rows 1 and 2 at token 10, version 1) and returns the raw
// and the fenced pool.
func mariaPool(t *testing.T) (raw, fenced *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw = testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 10, 10, 1), (2, 20, 10, 1)")
	fenced = testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	return raw, fenced
}

// TestIndexHintUpdateFencedClaimRefusalNamesHint (over-refusal, fixed for the UPDATE; the claim's
// refusal now names the hint). MariaDB accepts index hints (USE /
// FORCE / IGNORE INDEX) after the table of a single-table UPDATE and of a SELECT … FOR
// UPDATE; both are ordinary, legitimate SQL (a hint only steers the optimizer, it
// changes neither the rows selected nor what is written). The planner refuses both with
// ErrUnsupported and a misleading reason: the UPDATE as "a multi-table UPDATE whose
// table list it cannot read", the claim as "a locking SELECT over a join, grouping or
// set operation". The plain driver runs both.
//
// Right behaviour: fence the single-table UPDATE (the CASE assignments appended to its
// SET list; the hint can stay where it is) and claim the SELECT (the claim's UPDATE
// may take the hint too: MariaDB's UPDATE accepts it), as without the hint. At the
// least, the refusal should name the index hint rather than a join.
func TestIndexHintUpdateFencedClaimRefusalNamesHint(t *testing.T) {
	raw, fenced := mariaPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	ctx = fencedsql.WithToken(ctx, 20)
	// The raw server takes both shapes.
	if _, err := raw.ExecContext(ctx, "UPDATE accounts USE INDEX (PRIMARY) SET balance = balance WHERE id = 2"); err != nil {
		t.Fatalf("raw UPDATE with an index hint: %v", err)
	}
	for _, q := range []string{
		"UPDATE accounts USE INDEX (PRIMARY) SET balance = 11 WHERE id = 1",
		"UPDATE accounts FORCE INDEX (PRIMARY) SET balance = 11 WHERE id = 1",
	} {
		if _, err := fenced.ExecContext(ctx, q); err != nil {
			t.Errorf("%s: %v; want it fenced (token 20 is newer than the row's 10)", q, err)
		}
	}
	for _, q := range []string{
		"SELECT id, balance FROM accounts FORCE INDEX (PRIMARY) WHERE id = 1 FOR UPDATE",
		"SELECT a.id, a.balance FROM accounts a USE INDEX (PRIMARY) WHERE a.id = 1 FOR UPDATE",
	} {
		tx, err := fenced.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			// Decided: a claim with an index hint stays refused, typed and named as such
			// (its claiming UPDATE might select other rows under a LIMIT).
			if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "index hint") {
				t.Errorf("%s: %v; want the row claimed, or a refusal naming the index hint", q, err)
			}
			tx.Rollback()
			continue
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if err := tx.Commit(); err != nil || n != 1 {
			t.Errorf("%s: %d rows, commit %v; want 1 row claimed", q, n, err)
		}
	}
}

// TestQualifiedFencingColumnInInsertListReplaced (over-refusal, untyped error). The
// wrapper replaces the caller's own items for the fencing columns (an ORM that maps
// them, design G4: "A statement may assign the token or version column itself"): an
// INSERT whose column list names fence_token/version unqualified runs with the
// wrapper's token and version 1, and so does an UPDATE SET or an ON DUPLICATE KEY
// UPDATE item written table- or database-qualified (accounts.fence_token = …). MariaDB
// also accepts qualified names in an INSERT's column list (`INSERT INTO accounts (id,
// accounts.fence_token) …`), but there the planner does not see the fencing column: it
// keeps the caller's item, appends its own, and the server answers with the raw,
// untyped "Error 1110: Column 'fence_token' specified twice". Nothing is written (no
// fail-open), but a statement the wrapper fences when written unqualified fails with a
// driver error instead of being fenced (or refused with a typed error).
//
// Right behaviour: recognise a qualified column name (table., db.table., any quoting)
// in the INSERT column list as the fencing column and replace it, as for the
// unqualified name; at least refuse it with ErrUnsupported before sending.
func TestQualifiedFencingColumnInInsertListReplaced(t *testing.T) {
	raw, fenced := mariaPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	ctx = fencedsql.WithToken(ctx, 20)
	// The unqualified spelling is replaced (control).
	if _, err := fenced.ExecContext(ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (3, 1, 999, 999)"); err != nil {
		t.Fatalf("control, unqualified mapped columns: %v", err)
	}
	for i, q := range []string{
		"INSERT INTO accounts (id, balance, accounts.fence_token) VALUES (4, 1, 999)",
		"INSERT INTO accounts (id, balance, `accounts`.`version`) VALUES (5, 1, 999)",
	} {
		_, err := fenced.ExecContext(ctx, q)
		var tok, ver int64
		row := raw.QueryRowContext(ctx, "SELECT fence_token, version FROM accounts WHERE id = ?", 4+i)
		if rerr := row.Scan(&tok, &ver); rerr == nil {
			if tok != 20 || ver != 1 {
				t.Errorf("%s: stored token %d version %d; want 20 and 1", q, tok, ver)
			}
			continue
		}
		if err == nil || !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s: %v; want the row inserted with token 20 and version 1 (the item replaced, as unqualified), or at least ErrUnsupported", q, err)
		}
	}
}

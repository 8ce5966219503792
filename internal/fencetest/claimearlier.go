package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// testEarlierStampedRows: a claimed locking read with LIMIT, and a DELETE … ORDER BY …
// LIMIT, run as two statements (the fencing UPDATE, then the caller's statement
// restricted to the rows carrying the token) after the same holder stamped another
// matching row — in an earlier transaction, or earlier in the same one (red-team
// rt14c F2). The token alone does not tell that row from the ones the fencing UPDATE
// stamped, and when the UPDATE moves its row in the ORDER BY (a BEFORE UPDATE trigger
// or an ON UPDATE CURRENT_TIMESTAMP column maintaining updated_at, the job-queue
// pattern) or a tie is broken the other way, the second statement's LIMIT took the
// earlier row: one stamped, one read or deleted, and the count check passed.
//
// A claim must return exactly the rows whose version it advanced and, where the order
// is total, the plain locking read's rows; a DELETE must delete the plain DELETE's row
// or be refused with ErrUnsupported, changing nothing.
func testEarlierStampedRows(t *testing.T, b Backend) {
	cases := []struct {
		name    string
		touch   bool   // updated_at maintained on UPDATE
		order   string // the read's ORDER BY (none: "")
		limit   int
		sameTx  bool    // the earlier stamp is in the claim's transaction
		want    []int64 // the plain read's rows; nil where the order is not total
		deletes bool    // also the DELETE (where DELETE takes ORDER BY … LIMIT)
	}{
		{"UpdatedAt/EarlierTx", true, "ORDER BY updated_at", 1, false, []int64{1}, true},
		{"UpdatedAt/EarlierStatement", true, "ORDER BY updated_at", 1, true, []int64{1}, true},
		{"UpdatedAtTwo/EarlierTx", true, "ORDER BY updated_at", 2, false, []int64{1, 3}, true},
		{"Ties/EarlierTx", false, "ORDER BY balance", 1, false, nil, false},
		{"Ties/EarlierStatement", false, "ORDER BY balance", 1, true, nil, false},
		{"NoOrder/EarlierTx", false, "", 2, false, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := earlierStampedTable(t, b, c.touch)
			sel := "id, balance"
			if b.Numbered {
				sel += ", (SELECT 1) AS one" // keeps PostgreSQL's claim from one statement
			}
			read := fmt.Sprintf("SELECT %s FROM accounts WHERE balance < 50 %s LIMIT %d FOR UPDATE", sel, c.order, c.limit)
			got, stamped := e.claimAfterEarlierStamp(read, c.sameTx)
			t.Logf("%s: returned %v, stamped %v", read, got, stamped)
			if len(got) != c.limit || !reflect.DeepEqual(got, stamped) {
				t.Errorf("claim returned %v but advanced the version of %v; want the same %d rows", got, stamped, c.limit)
			}
			if c.want != nil && !reflect.DeepEqual(got, c.want) {
				t.Errorf("claim returned %v; the plain locking read returns %v", got, c.want)
			}
			if c.deletes && b.MySQL {
				e := earlierStampedTable(t, b, c.touch)
				e.deleteAfterEarlierStamp(fmt.Sprintf("DELETE FROM accounts WHERE balance < 50 %s LIMIT %d", c.order, c.limit), c.sameTx, c.want)
			}
		})
	}
}

// earlierStampedTable is a fresh accounts table with updated_at (maintained on UPDATE
// when touch: a BEFORE UPDATE trigger on PostgreSQL, ON UPDATE CURRENT_TIMESTAMP on
// MySQL) and rows 1–4, balance 5, updated_at increasing with id, token 1.
func earlierStampedTable(t *testing.T, b Backend, touch bool) *env {
	e := setup(t, b)
	ddl := []string{"ALTER TABLE accounts ADD COLUMN updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00'"}
	switch {
	case touch && b.MySQL:
		ddl[0] += " ON UPDATE CURRENT_TIMESTAMP(6)"
	case touch:
		ddl = append(ddl,
			"CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated_at := clock_timestamp(); RETURN NEW; END $$",
			"CREATE TRIGGER touch BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION touch()")
	}
	ddl = append(ddl, "INSERT INTO accounts (id, balance, fence_token, updated_at) VALUES (1, 5, 1, '2000-01-01 00:00:00'), (2, 5, 1, '2000-06-01 00:00:00'), (3, 5, 1, '2001-01-01 00:00:00'), (4, 5, 1, '2002-01-01 00:00:00')")
	for _, s := range ddl {
		if _, err := e.raw.ExecContext(e.ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return e
}

// earlierStamp has holder 10 write row 2 through the wrapper (stamping its token), in
// tx when it is not nil, else in a transaction of its own.
func (e *env) earlierStamp(tx *sql.Tx) {
	e.t.Helper()
	const write = "UPDATE accounts SET balance = balance WHERE id = 2"
	var err error
	if tx != nil {
		_, err = tx.ExecContext(tok(e.ctx, 10), write)
	} else {
		_, err = e.db.ExecContext(tok(e.ctx, 10), write)
	}
	if err != nil {
		e.t.Fatalf("earlier stamp: %v", err)
	}
}

// afterEarlierStamp opens holder 10's transaction after its earlier stamp of row 2
// (inside it when sameTx) and returns the token's context, the transaction and the
// rows' versions in it.
func (e *env) afterEarlierStamp(sameTx bool) (context.Context, *sql.Tx, map[int64]int64) {
	e.t.Helper()
	if !sameTx {
		e.earlierStamp(nil)
	}
	ctx := tok(e.ctx, 10)
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if sameTx {
		e.earlierStamp(tx)
	}
	return ctx, tx, versions(e.t, tx)
}

// claimAfterEarlierStamp runs read as holder 10 after its earlier stamp of row 2, and
// returns the ids read and the ids whose version the read advanced, both sorted.
func (e *env) claimAfterEarlierStamp(read string, sameTx bool) (got, stamped []int64) {
	t := e.t
	t.Helper()
	ctx, tx, before := e.afterEarlierStamp(sameTx)
	defer tx.Rollback() //nolint:errcheck
	rows, err := tx.QueryContext(ctx, read)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	cols, _ := rows.Columns()
	for rows.Next() {
		var id int64
		vals := []any{&id}
		for range cols[1:] {
			vals = append(vals, new(any))
		}
		if err := rows.Scan(vals...); err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("claim: %v", err)
	}
	rows.Close()
	for id, v := range versions(t, tx) {
		if v > before[id] {
			stamped = append(stamped, id)
		}
	}
	slices.Sort(got)
	slices.Sort(stamped)
	return got, stamped
}

// deleteAfterEarlierStamp runs del as holder 10 after its earlier stamp of row 2: it
// must delete the rows the plain DELETE deletes (want), or fail with ErrUnsupported
// and delete nothing.
func (e *env) deleteAfterEarlierStamp(del string, sameTx bool, want []int64) {
	t := e.t
	t.Helper()
	ctx, tx, before := e.afterEarlierStamp(sameTx)
	defer tx.Rollback() //nolint:errcheck
	_, derr := tx.ExecContext(ctx, del)
	var gone []int64
	for id := range before {
		if _, ok := versions(t, tx)[id]; !ok {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	t.Logf("%s: err %v, deleted %v", del, derr, gone)
	switch {
	case errors.Is(derr, fencedsql.ErrUnsupported):
		if len(gone) != 0 {
			t.Errorf("refused DELETE deleted %v", gone)
		}
	case derr != nil:
		t.Errorf("DELETE: %v; want success or ErrUnsupported", derr)
	case !reflect.DeepEqual(gone, want):
		t.Errorf("DELETE deleted %v; the plain DELETE deletes %v", gone, want)
	}
}

// versions reads every row's version in tx (a plain read: nothing claimed).
func versions(t *testing.T, tx *sql.Tx) map[int64]int64 {
	t.Helper()
	rows, err := tx.Query("SELECT id, version FROM accounts")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

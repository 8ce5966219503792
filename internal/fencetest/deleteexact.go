package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// DeleteCase is one two-statement DELETE of an exactness test: its statement, the rows
// its fencing UPDATE may stamp, and what it must do.
type DeleteCase struct {
	// Stamped are the ids of the rows the fencing UPDATE may select: the DELETE deletes
	// only rows among these, or fails.
	Stamped []int64
	// Run: it must succeed and delete exactly Stamped (its selection is stable once
	// keyed). Refused: it must fail with ErrUnsupported.
	Run, Refused bool
}

// CheckDeleteExact judges the DELETE q of c, which returned err and left the table's
// ids after (before: the ids before it ran): it deleted only rows its fencing UPDATE
// could stamp (all of them when c.Run), or failed with ErrUnsupported and deleted
// nothing.
func CheckDeleteExact(t testing.TB, c DeleteCase, q string, err error, before, after []int64) {
	t.Helper()
	gone := IDsMinus(before, after)
	switch {
	case err != nil && !errors.Is(err, fencedsql.ErrUnsupported):
		t.Fatalf("%s: %v, want the stamped rows deleted or ErrUnsupported", q, err)
	case err != nil && c.Run:
		t.Fatalf("%s: %v, want it to run (its keyed selection is stable)", q, err)
	case err == nil && c.Refused:
		t.Fatalf("%s ran; want ErrUnsupported", q)
	case err != nil && len(gone) > 0:
		t.Fatalf("%s failed (%v) but deleted rows %v", q, err, gone)
	case err == nil && len(IDsMinus(gone, c.Stamped)) > 0:
		t.Fatalf("%s deleted rows %v; its fencing UPDATE could stamp only %v", q, gone, c.Stamped)
	case err == nil && c.Run && !reflect.DeepEqual(gone, c.Stamped):
		t.Fatalf("%s deleted rows %v; its fencing UPDATE stamped %v", q, gone, c.Stamped)
	}
}

// IDsMinus returns the ids of all not in drop, in order (never nil).
func IDsMinus(all, drop []int64) []int64 {
	out := []int64{}
	for _, id := range all {
		kept := true
		for _, d := range drop {
			kept = kept && d != id
		}
		if kept {
			out = append(out, id)
		}
	}
	return out
}

// IDs returns the ids of the rows of accounts in db, in order (never nil).
func IDs(t testing.TB, db *sql.DB) []int64 {
	t.Helper()
	return TableIDs(t, db, "accounts")
}

// TableIDs returns the ids of the rows of table in db, in order (never nil).
func TableIDs(t testing.TB, db *sql.DB, table string) []int64 {
	t.Helper()
	rows, err := db.Query("SELECT id FROM " + table + " ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Seq returns the ids from through to.
func Seq(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// ExecDelete runs the DELETE q on db with ctx, on its own or (inTx) in a transaction
// committed after; a DELETE … RETURNING is queried and its rows read.
func ExecDelete(ctx context.Context, db *sql.DB, q string, inTx bool) error {
	if !inTx {
		_, err := db.ExecContext(ctx, q)
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: ErrTxDone
	if strings.Contains(strings.ToUpper(q), "RETURNING") {
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if err := rows.Close(); err != nil {
			return err
		}
	} else if _, err := tx.ExecContext(ctx, q); err != nil {
		return err
	}
	return tx.Commit()
}

// DeleteTableCase is a DeleteCase on its own table: the statements that set it up
// (DDL, rows), and the DELETE, run with token 10.
type DeleteTableCase struct {
	Name, Del string
	Setup     []string
	DeleteCase
}

// RunDeleteCases runs each case in parallel, in autocommit (the wrapper's own
// transaction) and in the caller's transaction committed after (ExecDelete), each
// on a database open returns: raw, set up with the case's statements, and fenced, a
// fenced pool guarding accounts there. It judges each with CheckDeleteExact.
func RunDeleteCases(t *testing.T, cases []DeleteTableCase, open func(t *testing.T, setup []string) (raw, fenced *sql.DB)) {
	for _, c := range cases {
		for _, inTx := range []bool{false, true} {
			name := c.Name + "/Autocommit"
			if inTx {
				name = c.Name + "/InTx"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				raw, fenced := open(t, c.Setup)
				before := IDs(t, raw)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				err := ExecDelete(fencedsql.WithToken(ctx, 10), fenced, c.Del, inTx)
				CheckDeleteExact(t, c.DeleteCase, c.Del, err, before, IDs(t, raw))
			})
		}
	}
}

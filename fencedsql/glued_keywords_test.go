// Valid statements whose clause keyword touches the token before it, fenced without gluing onto it.

package fencedsql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Not bad inputs: valid statements whose clause keyword touches the token before it.
// The fenced text spliced in before the keyword must stay separated from it (today
// "… ELSE NULL END" + "WHERE" becomes "ENDWHERE", a syntax error on every database).
func TestGluedClauseKeywordsSQLite(t *testing.T) {
	db := newBadSQLite(t)
	ctx := fencedsql.WithToken(context.Background(), 9)
	for _, q := range []string{
		`UPDATE accounts SET balance=(balance+1)WHERE id=1`,
		`UPDATE accounts SET note='x'WHERE id=1`,
		`INSERT INTO accounts(id,balance)VALUES(1,0)ON CONFLICT(id)DO UPDATE SET balance=(7)WHERE id=1`,
		`DELETE FROM accounts WHERE id IN(2,3)RETURNING id`,
	} {
		var err error
		if strings.Contains(q, "RETURNING") {
			err = func() error {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				rows, err := tx.QueryContext(ctx, q)
				if err != nil {
					return err
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					return err
				}
				return tx.Commit()
			}()
		} else {
			_, err = db.ExecContext(ctx, q)
		}
		if err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}

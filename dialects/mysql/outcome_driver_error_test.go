package mysql_test

import (
	"context"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestAutocommitServerErrorIsDriverError (red-team rt43d F2): a guarded write's server
// error outside a transaction is the driver's own *mysql.MySQLError, by type assertion
// (GORM's MySQL dialector with TranslateError, bun and database/sql code assert it), as
// inside a transaction and on the plain driver, and CommitOutcome still says not
// committed: a foreign key refusing an INSERT (1452), and one refusing a DELETE (1451),
// which runs in the wrapper's own transaction (no guard installed: two statements).
// Before, both came wrapped in the wrapper's outcome error.
func TestAutocommitServerErrorIsDriverError(t *testing.T) {
	raw, fenced := hookedOpen(t)
	for _, q := range []string{
		`CREATE TABLE oe_parents (id BIGINT PRIMARY KEY) ENGINE=InnoDB`,
		`ALTER TABLE accounts ADD COLUMN parent_id BIGINT NULL, ADD CONSTRAINT oe_parent_fk FOREIGN KEY (parent_id) REFERENCES oe_parents(id)`,
		`CREATE TABLE oe_children (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL, FOREIGN KEY (account_id) REFERENCES accounts(id)) ENGINE=InnoDB`,
		`INSERT INTO oe_children VALUES (1, 1)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ctx := fencedsql.WithToken(context.Background(), 10)
	for _, c := range []struct {
		q    string
		want uint16
	}{
		{"INSERT INTO accounts (id, balance, parent_id) VALUES (9, 1, 999)", 1452},
		{"DELETE FROM accounts WHERE id = 1", 1451},
	} {
		_, err := fenced.ExecContext(ctx, c.q)
		me, ok := err.(*gomysql.MySQLError)
		if !ok || me.Number != c.want {
			t.Errorf("%s: %v (%T), want the driver's *mysql.MySQLError %d", c.q, err, err, c.want)
		}
		if o := fencedsql.CommitOutcome(err); o != fencedsql.NotCommitted {
			t.Errorf("%s: CommitOutcome = %v, want not committed", c.q, o)
		}
	}
	if tok, ver := hookedTokVer(t, raw, 1); tok != 0 || ver != 0 {
		t.Errorf("row 1 after the refused DELETE: token %d version %d, want unchanged", tok, ver)
	}
}

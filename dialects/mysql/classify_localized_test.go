package mysql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// With the server's messages in another language (lc_messages in the DSN, SET at
// connect, or the server's default), error 1048 reads "Feld 'fence_token' darf nicht
// NULL sein": classify read the column after the English "Column '", and a stale write
// failed with the raw error instead of ErrFenced, an ExpectVersion mismatch without
// ErrVersionConflict (red-team rt40b F5). The column is now the message's quoted
// argument, in every language.
func TestLocalizedMessagesKeepErrFenced(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		"CREATE TABLE lm_a (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO lm_a VALUES (1, 100, 20, 1)",
		"CREATE TABLE lm_u (id INT PRIMARY KEY, code INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, UNIQUE KEY lm_u_code (code)) ENGINE=InnoDB",
		"INSERT INTO lm_u VALUES (1, 7, 20, 1), (2, 8, 20, 1)")
	for _, lc := range []string{"de_DE", "ru_RU", "ja_JP", "fr_FR", "en_US"} {
		t.Run(lc, func(t *testing.T) {
			db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=lm_a,lm_u&lc_messages="+lc)
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE lm_a SET balance = 666 WHERE id = 1")
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("stale write: err = %v; want ErrFenced", err)
			}
			_, err = db.ExecContext(fencedsql.ExpectVersion(fencedsql.WithToken(ctx, 30), 7), "UPDATE lm_a SET balance = 666 WHERE id = 1")
			if !errors.Is(err, fencedsql.ErrVersionConflict) {
				t.Errorf("version mismatch: err = %v; want ErrVersionConflict", err)
			}
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 30), "UPDATE lm_u SET code = 8 WHERE id = 1")
			var de *fencedsql.DuplicateError
			if !errors.As(err, &de) || !errors.Is(err, fencedsql.ErrDuplicate) || de.Constraint != "lm_u_code" {
				t.Errorf("duplicate: err = %v (%+v); want a *DuplicateError naming lm_u_code", err, de)
			}
		})
	}
}

package postgres_test

import (
	"database/sql"
	"strings"
	"testing"
)

// A fenced pool's open error never holds the DSN's password, in any spelling pgx
// reads (red-team rt31d F8: pgx's redaction misses "password = p", and its parse error
// quotes the DSN).
func TestFencedPoolErrorMasksPassword(t *testing.T) {
	const pw = "s3cr3t-Pw31d"
	for _, spelling := range []string{"password = " + pw, "password =" + pw, "password= " + pw, "password = '" + pw + "'", "password=" + pw} {
		db, err := sql.Open("fenced-pgx", "host=127.0.0.1 port=1 user=app "+spelling+" dbname=shop sslmode=bogus fenced_tables=accounts")
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		if err == nil {
			t.Fatal("ping succeeded")
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("the fenced pool's error holds the DSN's password (%q): %s", strings.ReplaceAll(spelling, pw, "PW"), strings.ReplaceAll(err.Error(), pw, "<PASSWORD>"))
		}
	}
}

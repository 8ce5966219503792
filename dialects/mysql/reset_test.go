package mysql_test

import (
	"context"
	"database/sql/driver"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rawWrapper is a wrapper layer that exposes what it wraps (as otelsql's and the
// fenced driver's connections do).
type rawWrapper struct{ driver.Conn }

func (w rawWrapper) Raw() driver.Conn { return w.Conn }

// TestResetKeepsSessionOnlyForGoSQLDriver: go-sql-driver/mysql's connection, bare or
// under wrappers exposing it with Raw(), runs no application code on reuse (the
// session check stands); any other connection may have changed the session.
func TestResetKeepsSessionOnlyForGoSQLDriver(t *testing.T) {
	judge := mysql.Dialect.(dialect.ResetJudge)
	db := testdb.Open(t, "mysql", testdb.MySQL(t))
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		raw := dc.(driver.Conn)
		if !judge.ResetKeepsSession(raw) || !judge.ResetKeepsSession(rawWrapper{rawWrapper{raw}}) {
			t.Error("go-sql-driver/mysql's connection (bare or wrapped) judged as possibly changing the session on reset")
		}
		if judge.ResetKeepsSession(rawWrapper{}) || judge.ResetKeepsSession(nil) {
			t.Error("a connection that is not go-sql-driver/mysql's judged as keeping its session")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

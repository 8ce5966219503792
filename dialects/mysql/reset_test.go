package mysql_test

import (
	"context"
	"database/sql/driver"
	"testing"

	"github.com/XSAM/otelsql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rawWrapper is a wrapper layer that exposes what it wraps (as otelsql's and the
// fenced driver's connections do); whether it runs code of its own on reuse, the
// judge cannot tell.
type rawWrapper struct{ driver.Conn }

func (w rawWrapper) Raw() driver.Conn { return w.Conn }

// TestResetKeepsSessionOnlyForGoSQLDriver: go-sql-driver/mysql's connection, bare or
// under otelsql's connection (a known forwarder), runs no application code on reuse
// (the session check stands); under any other Raw()-exposing layer, which may run its
// own ResetSession (red-team rt45c F6), or for any other connection, the session may
// have changed.
func TestResetKeepsSessionOnlyForGoSQLDriver(t *testing.T) {
	judge := mysql.Dialect.(dialect.ResetJudge)
	dsn := testdb.MySQL(t)
	db := testdb.Open(t, "mysql", dsn)
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Raw(func(dc any) error {
		raw := dc.(driver.Conn)
		if !judge.ResetKeepsSession(raw) {
			t.Error("go-sql-driver/mysql's connection judged as possibly changing the session on reset")
		}
		if judge.ResetKeepsSession(rawWrapper{raw}) || judge.ResetKeepsSession(rawWrapper{rawWrapper{raw}}) {
			t.Error("go-sql-driver/mysql's connection under a layer of unknown code judged as keeping its session")
		}
		if judge.ResetKeepsSession(rawWrapper{}) || judge.ResetKeepsSession(nil) {
			t.Error("a connection that is not go-sql-driver/mysql's judged as keeping its session")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	odb, err := otelsql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer odb.Close()
	oc, err := odb.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	if err := oc.Raw(func(dc any) error {
		raw := dc.(driver.Conn)
		if !judge.ResetKeepsSession(raw) {
			t.Errorf("go-sql-driver/mysql's connection under otelsql's (%T) judged as possibly changing the session on reset", raw)
		}
		if judge.ResetKeepsSession(rawWrapper{raw}) {
			t.Error("otelsql's connection under a layer of unknown code judged as keeping its session")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

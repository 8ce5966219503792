package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestSequenceListedReportedAsSequence (cosmetic): a MariaDB SEQUENCE listed in
// fenced_tables passes Ping (a view is refused there) and the first write reports it
// as a table missing its fencing columns, with the fix "ALTER TABLE t ADD COLUMN …",
// which cannot run on a sequence (the same class as rt31d F5 for views). Right
// behaviour: refused at the first connection with a *SchemaError saying t is a
// sequence, not a table, with no ALTER TABLE fix.
func TestSequenceListedReportedAsSequence(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn, "CREATE SEQUENCE t")
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db, err := sql.Open("fenced-mysql", dsn+sep+"fenced_tables=t")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Ping()
	if err == nil {
		_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 5), "UPDATE t SET balance = 2 WHERE id = 1")
	}
	var se *fencedsql.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("want a *SchemaError, got %T %v", err, err)
	}
	if !strings.Contains(se.Problem, "is a sequence, not a table") || se.Fix != "" {
		t.Fatalf("a listed sequence is misreported as a table:\nproblem: %s\nfix: %s", se.Problem, se.Fix)
	}
}

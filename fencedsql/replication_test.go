package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// replicating is SQLite's dialect with a ReplicationChecker that runs one query
// through schema.Check's CatalogQuery and judges its single value: "async" is a problem,
// anything else a note.
type replicating struct {
	dialect.Dialect
	dialect.Guarder
	dialect.Tombstoner
}

// OmittedCapabilities implements dialect.Reduced: every capability of the embedded
// dialect it does not forward is left out on purpose.
func (r replicating) OmittedCapabilities() []string {
	return dialect.MissingCapabilities(replicating{}, r.Dialect)
}

const replQuery = "SELECT replication_mode"

func (replicating) Replication(ctx context.Context, q dialect.CatalogQuery) (dialect.ReplicationReport, error) {
	rows, err := q(ctx, replQuery)
	if err != nil {
		return dialect.ReplicationReport{}, err
	}
	f := dialect.ReplicationFinding{Setting: "mode", Value: rows[0][0], Problem: "no replica", Note: true}
	if rows[0][0] == "async" {
		f = dialect.ReplicationFinding{Setting: "mode", Value: "async", Problem: "a failover forgets acknowledged writes", Fix: []string{"ALTER SYSTEM SET sync"}}
	}
	return dialect.ReplicationReport{Replicas: 1, Findings: []dialect.ReplicationFinding{f}}, nil
}

func replDialect() dialect.Dialect {
	d := sqlite.Dialect
	return replicating{d, d.(dialect.Guarder), d.(dialect.Tombstoner)}
}

// A replication problem makes every table's report not OK, in Problems, with its
// fix in Replication only (never in Fix, which fencedsql-schema -apply runs); a note
// stays in Replication. The checker runs once per call.
func TestCheckSchemaReplication(t *testing.T) {
	for _, c := range []struct {
		mode   string
		wantOK bool
	}{{"async", false}, {"none", true}} {
		t.Run(c.mode, func(t *testing.T) {
			db, mock, err := sqlmock.New(sqlmock.QueryMatcherOption(verdictMatcher))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			mock.ExpectQuery(replQuery).WillReturnRows(sqlmock.NewRows([]string{"m"}).AddRow(c.mode))
			for range 2 {
				mock.ExpectQuery(anySQL).WillReturnRows(columnRows(goodColumns...))                                                        // columns
				mock.ExpectQuery(anySQL).WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(int64(1)))                                   // guard
				mock.ExpectQuery(anySQL).WillReturnRows(sqlmock.NewRows([]string{"n", "t", "c", "s"}).AddRow("id", "INTEGER", "", "main")) // key
				mock.ExpectQuery(anySQL).WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(int64(1)))                                   // tombstones
			}
			reps, err := schema.Check(context.Background(), db, replDialect(), schema.GuardSpec{Table: "a"}, schema.GuardSpec{Table: "b"})
			if err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
			for _, r := range reps {
				if r.OK() != c.wantOK || !r.Replication.Checked || r.Replication.Replicas != 1 || len(r.Replication.Findings) != 1 || len(r.Fix) != 0 || len(r.Notes) != 0 {
					t.Fatalf("%s: %+v", r.Table, r)
				}
				if !c.wantOK && (len(r.Problems) != 1 || r.Problems[0] != "replication: mode = 'async': a failover forgets acknowledged writes") {
					t.Errorf("problems = %q", r.Problems)
				}
			}
		})
	}
}

// noReplication is SQLite's dialect with its optional interfaces (the
// ReplicationChecker among them) hidden.
type noReplication struct{ dialect.Dialect }

// OmittedCapabilities implements dialect.Reduced: every capability of the embedded
// dialect it does not forward is left out on purpose.
func (r noReplication) OmittedCapabilities() []string {
	return dialect.MissingCapabilities(noReplication{}, r.Dialect)
}

// A failed replication query fails schema.Check with the driver's error (the answer
// is unknown), not ErrSchema; a dialect without the checker reports Checked false.
func TestCheckSchemaReplicationQueryFails(t *testing.T) {
	db, mock, err := sqlmock.New(sqlmock.QueryMatcherOption(verdictMatcher))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	boom := errors.New("permission denied")
	mock.ExpectQuery(replQuery).WillReturnError(boom)
	_, err = schema.Check(context.Background(), db, replDialect(), schema.GuardSpec{Table: "a"})
	if !errors.Is(err, boom) || errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "replication query") {
		t.Fatalf("err = %v", err)
	}

	sdb, err := sql.Open("sqlite", "file:"+filepath.ToSlash(filepath.Join(t.TempDir(), "db.sqlite")))
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	reps, err := schema.Check(context.Background(), sdb, noReplication{sqlite.Dialect}, schema.GuardSpec{Table: "t"})
	if err != nil || reps[0].Replication.Checked {
		t.Fatalf("without a checker: %+v, %v", reps, err)
	}
	// SQLite's own checker: checked, nothing to report.
	reps, err = schema.Check(context.Background(), sdb, sqlite.Dialect, schema.GuardSpec{Table: "t"})
	if err != nil || !reps[0].Replication.Checked || len(reps[0].Replication.Findings) != 0 {
		t.Fatalf("sqlite: %+v, %v", reps, err)
	}
}

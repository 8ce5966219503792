// Package drivertest runs the drivers' own published test suites through fencedsql's
// wrapper, with no guarded table, to show that the wrapper is transparent where it
// does not fence (issue 13, acceptance 1):
//
//   - pgxstdlib: pgx v5's stdlib/sql_test.go, against FENCEDSQL_PG_DSN.
//   - mysqldriver: go-sql-driver/mysql's driver_test.go (an internal test of package
//     mysql, so it runs in a temporary copy of that module), raw and wrapped, against
//     FENCEDSQL_MYSQL_DSN; every test that passes raw must pass wrapped.
//
// Each sub-package keeps the published file verbatim under testdata/ and an adapted
// copy as its test; the adaptation is a short, fixed list of substitutions (open the
// pool through fencedsql, reach the driver's connection in sql.Conn.Raw callbacks
// through fencedsql.Unwrap), and a test regenerates the copy and fails if it differs,
// so nothing else can drift in.
package drivertest

// Package mysqldriver runs go-sql-driver/mysql's published driver tests
// (github.com/go-sql-driver/mysql@v1.10.1/driver_test.go, MPL 2.0, see
// testdata/mysql-LICENSE.txt) through fencedsql's wrapper and on the raw driver, and
// checks that every test that passes raw passes wrapped. driver_test.go is an internal
// test of package mysql, so each run builds a copy of the driver's module in a
// temporary directory (see suite_test.go); adapt_test.go lists the substitutions, the
// only differences between the published file and the wrapped run's copy in
// testdata/wrapped, next to the one file the wrapped run adds.
package mysqldriver

// Package pgxstdlib runs pgx v5's published database/sql test file
// (github.com/jackc/pgx/v5@v5.12.0/stdlib/sql_test.go, MIT licence, see
// testdata/pgx-LICENSE.txt) through fencedsql's wrapper. See adapt_test.go for the
// substitutions, the only differences from the published file.
package pgxstdlib

// Command pgservice is a small PostgreSQL-only service built on fencedsql: its data and
// its leases live in the same database. It takes a lease on an account from
// lockclient/sqllock, debits the account with a fenced UPDATE under that lease, and
// shows that a write under an older token is refused (fencedsql.ErrFenced).
//
//	go run ./examples/pgservice -dsn 'postgres://app@localhost/shop'
//
// Without -dsn it reads FENCEDSQL_PG_DSN (never shown: the usage text does not print
// it as the flag's default). It creates the tables it needs
// (pgservice_accounts and the lease table pgservice_locks) if they do not exist.
//
// It imports only what a PostgreSQL application needs: dialects/postgres (pgx) and
// lockclient/sqllock; neither the MySQL driver nor SQLite is linked (deps_test.go checks
// it). sqlx is, for the dialect's bind registration: a few symbols, no size change.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"
)

func main() {
	// The flag's default is "", never $FENCEDSQL_PG_DSN's value: the flag package prints
	// every default in the usage text (-h, a mistyped flag), and the DSN holds a password
	// (red-team rt45e F2). The variable is read after parsing.
	dsn := flag.String("dsn", "", "PostgreSQL DSN, URL or keyword/value (default: $FENCEDSQL_PG_DSN; it is not shown, it may hold a password)")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long")
	flag.Parse()
	if *dsn == "" {
		*dsn = os.Getenv("FENCEDSQL_PG_DSN")
	}
	if *dsn == "" {
		fmt.Fprintln(os.Stderr, "pgservice: no DSN: pass -dsn or set FENCEDSQL_PG_DSN")
		os.Exit(2)
	}
	if strings.ContainsAny(*dsn, "\r\n\x00") {
		// An env file's other lines (PGPASSWORD=…) would reach pgx, whose parse error
		// quotes the DSN whole (red-team rt45e F3).
		fmt.Fprintln(os.Stderr, "pgservice: the DSN holds a line break: give the DSN alone, on one line (it is not shown: it may hold a password)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := run(ctx, os.Stdout, *dsn); err != nil {
		fmt.Fprintln(os.Stderr, "pgservice:", err)
		os.Exit(1)
	}
}

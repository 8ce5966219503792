// Command pgservice is a small PostgreSQL-only service built on fencedsql: its data and
// its leases live in the same database. It takes a lease on an account from
// lockclient/sqllock, debits the account with a fenced UPDATE under that lease, and
// shows that a write under an older token is refused (fencedsql.ErrFenced).
//
//	go run ./examples/pgservice -dsn 'postgres://app@localhost/shop'
//
// Without -dsn it reads FENCEDSQL_PG_DSN. It creates the tables it needs
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
	"time"
)

func main() {
	dsn := flag.String("dsn", os.Getenv("FENCEDSQL_PG_DSN"), "PostgreSQL DSN, URL or keyword/value (default $FENCEDSQL_PG_DSN)")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long")
	flag.Parse()
	if *dsn == "" {
		fmt.Fprintln(os.Stderr, "pgservice: no DSN: pass -dsn or set FENCEDSQL_PG_DSN")
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

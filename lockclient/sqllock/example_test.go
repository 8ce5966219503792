package sqllock_test

import (
	"context"
	"database/sql"
	"log"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// A lease table in PostgreSQL (the same code works with sql.Open("mysql", …) on MySQL or
// MariaDB). Not run: it needs a server.
func Example() {
	ctx := context.Background()
	db, err := sql.Open("pgx", "postgres://app@db.internal/shop")
	if err != nil {
		log.Fatal(err)
	}
	// Once, e.g. at deploy time; idempotent.
	if err := sqllock.CreateTable(ctx, db, sqllock.Postgres, sqllock.DefaultTable); err != nil {
		log.Fatal(err)
	}
	backend, err := sqllock.New(db) // dialect detected from the pgx driver
	if err != nil {
		log.Fatal(err)
	}
	locks := lockclient.New(backend, lockclient.WithTTL(10*time.Second))
	defer locks.Close(ctx)

	lease, err := locks.Acquire(ctx, "account:42")
	if err != nil {
		log.Fatal(err) // wraps lockclient.ErrUnavailable while the database is unreachable
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	defer lease.Release(rctx)
	log.Printf("token %d", lease.Token()) // strictly increasing across all keys of the table
}

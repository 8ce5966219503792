package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	_ "github.com/fencedsql/fencedsql/dialects/postgres" // registers "fenced-pgx" (and pgx's "pgx")
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

const (
	accountsTable = "pgservice_accounts"
	locksTable    = "pgservice_locks"
	accountID     = 1
	opening       = 1000
	debit         = 10
)

// run sets the schema up, then debits the account once under a lease and checks that
// the row carries the lease's token and that a write under an older token is fenced.
func run(ctx context.Context, out io.Writer, dsn string) error {
	// Schema, through the plain pgx driver: the guarded table with the two columns
	// fencedsql maintains, and the lease table (CreateTable also upgrades it).
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+accountsTable+` (
		id          BIGINT PRIMARY KEY,
		balance     BIGINT NOT NULL CHECK (balance >= 0),
		fence_token BIGINT NOT NULL DEFAULT 0,
		version     BIGINT NOT NULL DEFAULT 0)`); err != nil {
		return fmt.Errorf("create %s: %w", accountsTable, err)
	}
	if _, err := admin.ExecContext(ctx, `INSERT INTO `+accountsTable+` (id, balance) VALUES ($1, $2)
		ON CONFLICT (id) DO NOTHING`, accountID, opening); err != nil {
		return fmt.Errorf("seed %s: %w", accountsTable, err)
	}
	if err := sqllock.CreateTable(ctx, admin, sqllock.Postgres, locksTable); err != nil {
		return err
	}

	// The application's pool: fencedsql's driver with the accounts guarded. The lease
	// table is not guarded, so the lock backend shares the pool (and LISTENs on it).
	db, err := sql.Open("fenced-pgx", withParam(dsn, fencedsql.ParamTables+"="+accountsTable))
	if err != nil {
		return err
	}
	defer db.Close()
	backend, err := sqllock.New(db, sqllock.WithTable(locksTable))
	if err != nil {
		return err
	}
	if err := backend.CheckTable(ctx); err != nil {
		return err
	}
	locks := lockclient.New(backend, lockclient.WithTTL(10*time.Second), lockclient.WithOwner("pgservice"))

	lease, err := locks.Acquire(ctx, fmt.Sprintf("account:%d", accountID))
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	defer lease.Release(context.WithoutCancel(ctx)) //nolint:errcheck // best effort; the lease expires anyway

	// The fenced UPDATE: the wrapper stamps the row with the lease's token, and refuses
	// it if a newer holder already wrote the row.
	lctx := fencedsql.WithLease(ctx, lease)
	res, err := db.ExecContext(lctx, `UPDATE `+accountsTable+` SET balance = balance - $1 WHERE id = $2`, debit, accountID)
	if err != nil {
		return fmt.Errorf("debit: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("debit: %d rows affected, %v; want 1", n, err)
	}
	var balance, token int64
	if err := db.QueryRowContext(ctx, `SELECT balance, fence_token FROM `+accountsTable+` WHERE id = $1`, accountID).Scan(&balance, &token); err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if uint64(token) != lease.Token() {
		return fmt.Errorf("row carries token %d, want the lease's %d", token, lease.Token())
	}
	fmt.Fprintf(out, "debited %d under lease token %d: balance %d\n", debit, lease.Token(), balance)

	// A writer whose lease was superseded (simulated: the previous token) is refused,
	// and the row is unchanged.
	if lease.Token() > 1 {
		stale := fencedsql.WithToken(ctx, lease.Token()-1)
		_, err = db.ExecContext(stale, `UPDATE `+accountsTable+` SET balance = balance - $1 WHERE id = $2`, debit, accountID)
		if !errors.Is(err, fencedsql.ErrFenced) {
			return fmt.Errorf("write under token %d: got %v, want fencedsql.ErrFenced", lease.Token()-1, err)
		}
		var after int64
		if err := db.QueryRowContext(ctx, `SELECT balance FROM `+accountsTable+` WHERE id = $1`, accountID).Scan(&after); err != nil {
			return fmt.Errorf("read back: %w", err)
		}
		if after != balance {
			return fmt.Errorf("fenced write changed the balance: %d, want %d", after, balance)
		}
		fmt.Fprintf(out, "write under stale token %d refused (fencedsql.ErrFenced): balance still %d\n", lease.Token()-1, after)
	}
	return nil
}

// withParam appends kv to dsn, a PostgreSQL URL or keyword/value DSN.
func withParam(dsn, kv string) string {
	switch {
	case strings.Contains(dsn, "://") && strings.Contains(dsn, "?"):
		return dsn + "&" + kv
	case strings.Contains(dsn, "://"):
		return dsn + "?" + kv
	default:
		return dsn + " " + kv
	}
}

package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "github.com/fencedsql/fencedsql/dialects/sqlite" // registers "fenced-sqlite" (and the plain "sqlite")
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// config is the story's settings.
type config struct {
	TTL time.Duration // lease time-to-live; 0: 300ms
}

const (
	accountID = 42
	opening   = 100 // the balance both workers read
	deductA   = 30  // A's deduction: the one that arrives late
	deductB   = 20  // B's deduction: the one that must survive
	lockKey   = "account:42"
)

// run tells the story on out. It returns an error if the story did not end as it
// must: A's late write fenced, and the balance reflecting B's deduction only.
func run(ctx context.Context, out io.Writer, cfg config) error {
	if cfg.TTL <= 0 {
		cfg.TTL = 300 * time.Millisecond
	}
	dir, err := os.MkdirTemp("", "fencedsql-transfer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dsn := sqliteDSN(filepath.Join(dir, "bank.db"))

	// The schema is created through the plain driver. A guarded table needs the two
	// columns fencedsql maintains: the token that last wrote the row, and a version.
	admin, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `CREATE TABLE accounts (
		id          INTEGER PRIMARY KEY,
		owner       TEXT    NOT NULL,
		balance     INTEGER NOT NULL CHECK (balance >= 0),
		fence_token BIGINT  NOT NULL DEFAULT 0,
		version     BIGINT  NOT NULL DEFAULT 0)`); err != nil {
		return err
	}
	if _, err := admin.ExecContext(ctx, `INSERT INTO accounts (id, owner, balance) VALUES (?, 'alice', ?)`, accountID, opening); err != nil {
		return err
	}

	// The application's handle: fencedsql's driver, with accounts guarded.
	db, err := sql.Open("fenced-sqlite", dsn+"&"+fencedsql.ParamTables+"=accounts")
	if err != nil {
		return err
	}
	defer db.Close()

	svc := memlock.New()
	// The lock service has been in use: six earlier grants (other accounts), so that
	// A's grant is token 7 and B's token 8.
	if err := preIssue(ctx, svc, cfg.TTL, 6); err != nil {
		return err
	}
	// Each worker is its own lock client: its own "process".
	procA := lockclient.New(svc, lockclient.WithTTL(cfg.TTL), lockclient.WithOwner("A"))
	procB := lockclient.New(svc, lockclient.WithTTL(cfg.TTL), lockclient.WithOwner("B"))
	defer closeClient(ctx, procA)
	defer closeClient(ctx, procB)

	fmt.Fprintf(out, "account %d (alice) holds %d. Workers A and B each deduct from it under the lock %q (lease TTL %v).\n\n",
		accountID, opening, lockKey, cfg.TTL)

	// 1-2. A takes the lock and reads.
	leaseA, err := procA.Acquire(ctx, lockKey)
	if err != nil {
		return fmt.Errorf("A: acquire: %w", err)
	}
	ctxA := fencedsql.WithLease(ctx, leaseA)
	fmt.Fprintf(out, "A  acquires %s: fencing token %d\n", lockKey, leaseA.Token())
	balA, err := readBalance(ctxA, db)
	if err != nil {
		return fmt.Errorf("A: read: %w", err)
	}
	fmt.Fprintf(out, "A  reads balance %d and will write %d (deducting %d)\n", balA, balA-deductA, deductA)

	// 3. A stalls. The pause is modelled by the lock service holding every request from
	// A's process (its renewals), while A's code does nothing: exactly what the service
	// sees of a frozen process.
	svc.Pause("A")
	fmt.Fprintf(out, "A  stalls before writing (a stop-the-world GC pause): its lease renewals stop reaching the lock service\n")

	// 4. B waits for the lock; the service grants it once A's lease has expired.
	fmt.Fprintf(out, "B  asks for %s and waits: A still holds it\n", lockKey)
	leaseB, err := procB.Acquire(ctx, lockKey)
	if err != nil {
		return fmt.Errorf("B: acquire: %w", err)
	}
	fmt.Fprintf(out, "   the lock service expires A's lease (no renewal for a TTL, judged on its own clock)\n")
	fmt.Fprintf(out, "B  acquires %s: fencing token %d\n", lockKey, leaseB.Token())
	ctxB := fencedsql.WithLease(ctx, leaseB)
	balB, err := readBalance(ctxB, db)
	if err != nil {
		return fmt.Errorf("B: read: %w", err)
	}
	if err := writeBalance(ctxB, db, balB-deductB); err != nil {
		return fmt.Errorf("B: write: %w", err)
	}
	fmt.Fprintf(out, "B  reads balance %d, writes %d (deducting %d) with token %d: committed\n", balB, balB-deductB, deductB, leaseB.Token())
	if err := leaseB.Release(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("B: release: %w", err)
	}
	fmt.Fprintf(out, "B  releases the lock\n")

	// 5. A wakes up and writes what it computed before the pause. It does not look at
	// its lease first: a paused process cannot know it was paused, and a check right
	// before the write is racy anyway (the pause can fall between the check and the
	// write). The database's token check is the one that cannot be fooled.
	svc.Resume("A")
	fmt.Fprintf(out, "A  resumes, unaware of the pause, and writes balance %d with token %d\n", balA-deductA, leaseA.Token())
	// Bound to the lease (fencedsql.WithLease), the write is refused before it is sent:
	// A's own lock client gave the lease up at its local deadline. That check is racy,
	// though: the pause can fall right after it, with the write on its way. The write
	// that got past it carries only the token; the database refuses it.
	if err := writeBalance(ctxA, db, balA-deductA); errors.Is(err, lockclient.ErrLeaseLost) {
		fmt.Fprintf(out, "   refused by A's own client before anything was sent: %v\n", err)
	} else {
		return fmt.Errorf("A with its lost lease: err = %v, want ErrLeaseLost", err)
	}
	fmt.Fprintf(out, "A  the same write already past that check (the pause fell right after it) carries only token %d\n", leaseA.Token())
	err = writeBalance(fencedsql.WithToken(ctx, leaseA.Token()), db, balA-deductA)
	switch {
	case errors.Is(err, fencedsql.ErrFenced):
		fmt.Fprintf(out, "   refused by the database: %v\n", err)
		fmt.Fprintf(out, "   (through the plain driver this write would have committed: balance %d, B's deduction of %d silently lost)\n",
			balA-deductA, deductB)
	case err == nil:
		return errors.New("A's late write with a stale token committed: fencing did not hold")
	default:
		return fmt.Errorf("A: write: %w", err)
	}
	// A's own lock client gave the lease up at its local deadline, before the service
	// expired it (so this does not wait).
	<-leaseA.Lost()
	fmt.Fprintf(out, "A  checks its lease afterwards: lost; it stops and reports the deduction as failed (to retry under a new lease)\n")
	// The release is owner- and token-checked: A's stale release cannot free a lock
	// someone else holds.
	_ = leaseA.Release(context.WithoutCancel(ctx))

	// 6. The outcome.
	var final, token, version int64
	if err := admin.QueryRowContext(ctx, `SELECT balance, fence_token, version FROM accounts WHERE id = ?`, accountID).
		Scan(&final, &token, &version); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nfinal balance %d (fence_token %d, version %d): %d - %d, B's deduction only; A's stale write changed nothing\n",
		final, token, version, opening, deductB)
	if final != opening-deductB || uint64(token) != leaseB.Token() {
		return fmt.Errorf("final balance %d with fence_token %d, want %d with token %d", final, token, opening-deductB, leaseB.Token())
	}
	return nil
}

// preIssue makes svc issue n grants (to other keys), so the next grant's token is n+1.
func preIssue(ctx context.Context, svc *memlock.Service, ttl time.Duration, n int) error {
	c := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithOwner("earlier"))
	defer closeClient(ctx, c)
	for i := 1; ; i++ {
		if last, _ := svc.LastToken(ctx); last >= uint64(n) { // in memory: never fails
			break
		}
		l, err := c.Acquire(ctx, fmt.Sprintf("account:%d", i))
		if err != nil {
			return err
		}
		if err := l.Release(ctx); err != nil {
			return err
		}
	}
	return nil
}

// readBalance reads the balance in a short transaction. Reads need no token.
func readBalance(ctx context.Context, db *sql.DB) (int64, error) {
	var bal int64
	err := db.QueryRowContext(ctx, `SELECT balance FROM accounts WHERE id = ?`, accountID).Scan(&bal)
	return bal, err
}

// writeBalance stores bal in a transaction bound to ctx's lease: the wrapper rewrites
// the UPDATE so that the database refuses it if a newer token already wrote the row.
func writeBalance(ctx context.Context, db *sql.DB, bal int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = ? WHERE id = ?`, bal, accountID); err != nil {
		return err
	}
	return tx.Commit()
}

func closeClient(ctx context.Context, c *lockclient.Client) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = c.Close(cctx)
}

// sqliteDSN is a modernc.org/sqlite DSN for the file at path: writers wait for each
// other and take the write lock at BEGIN.
func sqliteDSN(path string) string {
	return "file:" + (&url.URL{Path: filepath.ToSlash(path)}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
}

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

// config is the scenario's settings.
type config struct {
	TTL time.Duration // the scheduler lease's time-to-live; 0: 300ms
}

const lockKey = "scheduler"

// job is a queue message: what to run, and the token of the scheduler that dispatched
// it. Workers write with that token, never with one of their own.
type job struct {
	ID    string
	RunID string // the logical run: unique in job_runs
	Token uint64
	By    string // the dispatching scheduler
}

// outcome is what the scenario observed, checked by run before it returns.
type outcome struct {
	staleFenced bool   // scheduler-1's job refused with ErrFenced
	duplicate   bool   // the redelivered job refused with ErrDuplicate
	constraint  string // the constraint named by the DuplicateError
	runs        int    // rows in job_runs
	runWorker   string // who ran it
	runToken    int64  // with which token
	jobStatus   string
	jobToken    int64
}

// run plays the scenario on out and returns an error unless the stale job was fenced,
// the duplicate refused and the job executed exactly once.
func run(ctx context.Context, out io.Writer, cfg config) error {
	if cfg.TTL <= 0 {
		cfg.TTL = 300 * time.Millisecond
	}
	dir, err := os.MkdirTemp("", "fencedsql-scheduler-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dsn := sqliteDSN(filepath.Join(dir, "jobs.db"))

	admin, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer admin.Close()
	for _, ddl := range []string{
		`CREATE TABLE jobs (
			id            TEXT PRIMARY KEY,
			run_id        TEXT NOT NULL,
			status        TEXT NOT NULL,  -- pending, dispatched, done
			dispatched_by TEXT,
			done_by       TEXT,
			fence_token   BIGINT NOT NULL DEFAULT 0,
			version       BIGINT NOT NULL DEFAULT 0)`,
		// One row per execution, written in the same transaction as the job's effects.
		// The UNIQUE run_id is the last line of defence against double execution.
		`CREATE TABLE job_runs (
			run_id      TEXT NOT NULL CONSTRAINT job_runs_run_id_key UNIQUE,
			job_id      TEXT NOT NULL,
			worker      TEXT NOT NULL,
			result      TEXT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0,
			version     BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO jobs (id, run_id, status) VALUES ('invoice-batch', 'invoice-batch@2025-06-30', 'pending')`,
	} {
		if _, err := admin.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}

	// Schedulers and workers write through fencedsql's driver; both tables are guarded.
	db, err := sql.Open("fenced-sqlite", dsn+"&"+fencedsql.ParamTables+"=jobs,job_runs")
	if err != nil {
		return err
	}
	defer db.Close()

	svc := memlock.New()
	s1 := lockclient.New(svc, lockclient.WithTTL(cfg.TTL), lockclient.WithOwner("scheduler-1"))
	s2 := lockclient.New(svc, lockclient.WithTTL(cfg.TTL), lockclient.WithOwner("scheduler-2"))
	defer closeClient(ctx, s1)
	defer closeClient(ctx, s2)

	var queue []job // the message queue, in delivery order
	var oc outcome
	fmt.Fprintf(out, "one job, invoice-batch (run invoice-batch@2025-06-30); schedulers take the lease %q (TTL %v)\n\n", lockKey, cfg.TTL)

	// scheduler-1 leads and dispatches.
	lease1, err := s1.Acquire(ctx, lockKey)
	if err != nil {
		return fmt.Errorf("scheduler-1: acquire: %w", err)
	}
	fmt.Fprintf(out, "scheduler-1  acquires %q: token %d\n", lockKey, lease1.Token())
	jobs, err := dispatch(fencedsql.WithLease(ctx, lease1), db, "scheduler-1", lease1.Token())
	if err != nil {
		return fmt.Errorf("scheduler-1: dispatch: %w", err)
	}
	for _, j := range jobs {
		fmt.Fprintf(out, "scheduler-1  dispatches %s with token %d\n", j.ID, j.Token)
	}
	queue = append(queue, jobs...)

	// scheduler-1 stalls; the lease service expires its lease.
	svc.Pause("scheduler-1")
	fmt.Fprintf(out, "scheduler-1  stalls (a GC pause) before any worker has run its job; its lease renewals stop\n")

	// scheduler-2 takes over and re-dispatches what is not done.
	lease2, err := s2.Acquire(ctx, lockKey)
	if err != nil {
		return fmt.Errorf("scheduler-2: acquire: %w", err)
	}
	fmt.Fprintf(out, "scheduler-2  acquires %q after scheduler-1's lease expired: token %d\n", lockKey, lease2.Token())
	jobs, err = dispatch(fencedsql.WithLease(ctx, lease2), db, "scheduler-2", lease2.Token())
	if err != nil {
		return fmt.Errorf("scheduler-2: dispatch: %w", err)
	}
	for _, j := range jobs {
		fmt.Fprintf(out, "scheduler-2  finds %s not done and dispatches it again with token %d\n", j.ID, j.Token)
	}
	queue = append(queue, jobs...)
	// At-least-once delivery: the queue will deliver scheduler-2's message twice (the
	// first worker's acknowledgement gets lost).
	queue = append(queue, jobs...)
	fmt.Fprintln(out)

	// The workers. They hold no lease: each execution is bound to the job's token.
	for i, j := range queue {
		worker := fmt.Sprintf("worker-%c", 'a'+i)
		fmt.Fprintf(out, "%s  runs %s (dispatched by %s, token %d)\n", worker, j.ID, j.By, j.Token)
		err := execute(ctx, db, worker, j)
		var dup *fencedsql.DuplicateError
		switch {
		case err == nil:
			fmt.Fprintf(out, "          committed: run %s recorded\n", j.RunID)
		case errors.Is(err, fencedsql.ErrFenced):
			oc.staleFenced = true
			fmt.Fprintf(out, "          refused by the database (ErrFenced): a newer scheduler owns this job; nothing changed\n")
		case errors.As(err, &dup):
			oc.duplicate, oc.constraint = true, dup.Constraint
			fmt.Fprintf(out, "          refused by the database (ErrDuplicate, constraint %s): run %s already executed; rolled back\n",
				dup.Constraint, j.RunID)
		default:
			return fmt.Errorf("%s: %w", worker, err)
		}
	}

	// scheduler-1 wakes up; its lock client gave the lease up at its local deadline.
	svc.Resume("scheduler-1")
	<-lease1.Lost()
	fmt.Fprintf(out, "\nscheduler-1  resumes: its lease is lost, it stops scheduling (and anything it still sent would be fenced)\n")
	_ = lease1.Release(context.WithoutCancel(ctx))
	_ = lease2.Release(context.WithoutCancel(ctx))

	// The outcome.
	if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM job_runs`).Scan(&oc.runs); err != nil {
		return err
	}
	if err := admin.QueryRowContext(ctx, `SELECT worker, fence_token FROM job_runs WHERE run_id = 'invoice-batch@2025-06-30'`).
		Scan(&oc.runWorker, &oc.runToken); err != nil {
		return err
	}
	if err := admin.QueryRowContext(ctx, `SELECT status, fence_token FROM jobs WHERE id = 'invoice-batch'`).
		Scan(&oc.jobStatus, &oc.jobToken); err != nil {
		return err
	}
	fmt.Fprintf(out, "\njob_runs: %d row (run invoice-batch@2025-06-30 by %s with token %d); jobs: invoice-batch %s, fence_token %d\n",
		oc.runs, oc.runWorker, oc.runToken, oc.jobStatus, oc.jobToken)
	fmt.Fprintf(out, "the job ran exactly once, under the newest scheduler's token\n")
	switch {
	case !oc.staleFenced:
		return errors.New("the stale scheduler's job was not fenced")
	case !oc.duplicate:
		return errors.New("the redelivered job was not refused as a duplicate")
	case oc.runs != 1 || uint64(oc.runToken) != lease2.Token() || oc.jobStatus != "done":
		return fmt.Errorf("job_runs has %d rows (token %d), job status %q: want one run with token %d, done",
			oc.runs, oc.runToken, oc.jobStatus, lease2.Token())
	}
	return nil
}

// dispatch marks every job that is not done as dispatched by scheduler, with ctx's
// token, and returns the messages to enqueue. A job dispatched by an earlier scheduler
// is dispatched again: its scheduler may be gone, and if it is not, its message is
// fenced now that the row carries a newer token.
func dispatch(ctx context.Context, db *sql.DB, scheduler string, token uint64) ([]job, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, run_id FROM jobs WHERE status <> 'done' ORDER BY id`)
	if err != nil {
		return nil, err
	}
	var jobs []job
	for rows.Next() {
		j := job{Token: token, By: scheduler}
		if err := rows.Scan(&j.ID, &j.RunID); err != nil {
			rows.Close()
			return nil, err
		}
		jobs = append(jobs, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if _, err := db.ExecContext(ctx, `UPDATE jobs SET status = 'dispatched', dispatched_by = ? WHERE id = ?`, scheduler, j.ID); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// execute runs j as worker: one short transaction bound to the job's token, holding the
// job's effects (here, the result row in job_runs) and the job's completion.
func execute(ctx context.Context, db *sql.DB, worker string, j job) error {
	// Slow, side-effect-free preparation would go here, before the transaction.
	result := "42 invoices issued"

	ctx = fencedsql.WithToken(ctx, j.Token)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	// Fenced: refused if a newer scheduler has written the job row since.
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'done', done_by = ? WHERE id = ?`, worker, j.ID); err != nil {
		return err
	}
	// Unique: refused if this run was already executed.
	if _, err := tx.ExecContext(ctx, `INSERT INTO job_runs (run_id, job_id, worker, result) VALUES (?, ?, ?, ?)`,
		j.RunID, j.ID, worker, result); err != nil {
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

// Command scheduler shows fencing tokens travelling with work: a scheduler holds a
// lease, dispatches jobs that carry the lease's token, and the workers that execute
// them write only through fencedsql's driver, bound to the job's token. It runs on the
// embedded SQLite and the in-process lock service (no server needed):
//
//	go run ./examples/scheduler
//
// Two safety nets are shown, because a job system needs both:
//
//   - Fencing stops a stale scheduler's job. scheduler-1 takes the "scheduler" lease
//     (token 1) and dispatches the job invoice-batch: it marks the jobs row dispatched
//     with its token and puts {job, token 1} on the queue. Then it stalls (a GC pause)
//     past its lease. scheduler-2 is granted the lease (token 2), finds the job not
//     done and dispatches it again, with token 2, which the jobs row now carries. When
//     a worker finally picks up scheduler-1's message and executes it with
//     fencedsql.WithToken(ctx, 1), its first write to the jobs row is refused by the
//     database with fencedsql.ErrFenced: the job belongs to a newer scheduler, and the
//     stale execution changes nothing.
//
//   - A unique constraint stops double execution. Fencing accepts equal tokens (a holder
//     may write a row several times, and a retry is idempotent), so it does not stop the
//     queue from delivering scheduler-2's message twice (at-least-once delivery: the
//     first worker's acknowledgement was lost). Every execution records its run in
//     job_runs, whose run_id (the job's logical run, invoice-batch@2025-06-30) is
//     UNIQUE, in the same transaction as the job's effects. The second execution fails
//     with fencedsql.ErrDuplicate, naming the constraint (errors.As with
//     *fencedsql.DuplicateError), and is rolled back: the job ran exactly once.
//
// Keep the critical section small: the scheduler holds its lease only to decide and
// dispatch; workers never hold it at all, they carry its token. Slow work that has no
// effect on the database (rendering the invoices, calling other services for data)
// belongs before the short fenced transaction, and effects outside the database need
// their own idempotency key (the run_id serves).
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
	ttl := flag.Duration("ttl", 300*time.Millisecond, "the scheduler lease's time-to-live")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, config{TTL: *ttl})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
}

// Command transfer tells the balance-deduction story that fencing tokens exist for, on
// the embedded SQLite and the in-process lock service (no server needed):
//
//	go run ./examples/transfer
//	go run ./examples/transfer -ttl 1s
//
// Account 42 holds 100. Two payment workers, A and B, each deduct from it under the
// lock "account:42", and each computes the new balance from the one it read (a
// read-modify-write, the usual shape of business code):
//
//  1. A takes the lock and gets fencing token 7 (the lock service issued six grants
//     before, so the numbers match the classic telling of the story).
//  2. A reads the balance: 100. It means to deduct 30 and write 70.
//  3. A stalls before writing, like a process frozen by a stop-the-world GC pause: its
//     lease renewals stop reaching the lock service (memlock's Pause).
//  4. The lock service expires A's lease after its TTL, on its own clock, and grants
//     the lock to B with token 8. B reads 100, deducts 20, writes 80 and commits.
//  5. A wakes up. It does not know it was paused (no process can), so it writes the
//     balance it computed, 70, with token 7. Through the plain driver that write would
//     succeed and silently erase B's deduction. Through fencedsql's driver the database
//     refuses it inside the UPDATE itself, because the row already carries token 8: the
//     statement fails with fencedsql.ErrFenced and changes nothing.
//  6. The final balance is 80: B's deduction, and only B's.
//
// Keep the critical section small. The lease only has to cover the read and the write;
// slow work (calling a payment provider, rendering a receipt, computing a fraud score)
// belongs before taking the lock, or after releasing it. Every millisecond spent inside
// the lock is a millisecond in which a pause can outlast the lease. Fencing makes such
// a late write harmless, but it turns it into a failed operation that must be retried;
// a small critical section makes that rare.
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
	ttl := flag.Duration("ttl", 300*time.Millisecond, "lease time-to-live (the pause lasts until B has finished, at least one TTL)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, config{TTL: *ttl})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "transfer:", err)
		os.Exit(1)
	}
}

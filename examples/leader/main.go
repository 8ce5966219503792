// Command leader shows leader election where the term is the fencing token. It runs on
// the embedded SQLite and the in-process lock service (no server needed):
//
//	go run ./examples/leader
//
// Three nodes campaign for the lock "leader". The lock's fencing token is the leader's
// term: the lock service issues strictly increasing tokens, so every new leader has a
// higher term than all before it. The leader writes the cluster's state (one row of
// the guarded table cluster_state) through fencedsql's driver, bound to its lease, so
// each write carries the term and the row's fence_token column records the highest term
// that wrote it.
//
//  1. node-1, node-2 and node-3 campaign; node-1 wins term 1 and the others follow.
//     node-1 takes office (it writes its name and term into the state row) and sets
//     max_connections = 100.
//  2. node-1 is cut off from the lock service (an asymmetric partition: it still
//     reaches the database). Its renewals are lost, and the service expires its lease.
//  3. node-2's election timeout fires first (each node waits a different time, as in
//     Raft); it campaigns, wins term 2, takes office and sets max_connections = 200.
//     node-3 campaigns later and finds the lock held: it stays a follower.
//  4. node-1, deposed but still believing it leads, sets max_connections = 50 with
//     term 1. The database refuses the write with fencedsql.ErrFenced, because the row
//     already carries term 2: the deposed leader can no longer change anything. It
//     steps down, and once the partition heals it rejoins as a follower.
//
// Fencing is per row: a deposed leader's write to a row no newer leader has touched
// yet would still succeed. That is why a new leader "takes office" by writing its term
// into the state it owns (here, the single state row) before anything else, and why
// the state a leader owns should live in rows that every new term writes.
//
// Keep the leader's critical section small too: compute the new configuration first,
// then write it in one short transaction.
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
	ttl := flag.Duration("ttl", 300*time.Millisecond, "the leader lease's time-to-live")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, config{TTL: *ttl})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "leader:", err)
		os.Exit(1)
	}
}

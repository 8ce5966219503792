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
	TTL time.Duration // the leader lease's time-to-live; 0: 300ms
}

const lockKey = "leader"

// node is one member of the cluster: its own lock client ("process").
type node struct {
	name  string
	locks *lockclient.Client
	lease *lockclient.Lease // while it believes it leads
}

// term is the node's term: its lease's fencing token.
func (n *node) term() uint64 { return n.lease.Token() }

// run plays the scenario on out. It returns an error unless the deposed leader's write
// was fenced and the state reflects the new leader only.
func run(ctx context.Context, out io.Writer, cfg config) error {
	if cfg.TTL <= 0 {
		cfg.TTL = 300 * time.Millisecond
	}
	dir, err := os.MkdirTemp("", "fencedsql-leader-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dsn := sqliteDSN(filepath.Join(dir, "cluster.db"))

	admin, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer admin.Close()
	for _, ddl := range []string{
		`CREATE TABLE cluster_state (
			id              INTEGER PRIMARY KEY,
			leader          TEXT    NOT NULL,
			term            BIGINT  NOT NULL,
			max_connections INTEGER NOT NULL,
			fence_token     BIGINT  NOT NULL DEFAULT 0,  -- the highest term that wrote the row
			version         BIGINT  NOT NULL DEFAULT 0)`,
		`INSERT INTO cluster_state (id, leader, term, max_connections) VALUES (1, '', 0, 10)`,
	} {
		if _, err := admin.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	db, err := sql.Open("fenced-sqlite", dsn+"&"+fencedsql.ParamTables+"=cluster_state")
	if err != nil {
		return err
	}
	defer db.Close()

	svc := memlock.New()
	nodes := make([]*node, 3)
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i+1)
		nodes[i] = &node{name: name, locks: lockclient.New(svc, lockclient.WithTTL(cfg.TTL), lockclient.WithOwner(name))}
		defer closeClient(ctx, nodes[i].locks)
	}
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	fmt.Fprintf(out, "three nodes campaign for the lock %q (lease TTL %v); the lease's fencing token is the leader's term\n\n", lockKey, cfg.TTL)

	// 1. The first election.
	for _, n := range nodes {
		if err := campaign(ctx, out, n); err != nil {
			return err
		}
	}
	if n1.lease == nil {
		return errors.New("node-1 did not win the first election")
	}
	if err := takeOffice(ctx, db, n1); err != nil {
		return fmt.Errorf("node-1: take office: %w", err)
	}
	fmt.Fprintf(out, "node-1  takes office: writes leader=node-1, term=%d into cluster_state\n", n1.term())
	if err := setMaxConnections(ctx, db, n1, 100); err != nil {
		return fmt.Errorf("node-1: %w", err)
	}
	fmt.Fprintf(out, "node-1  sets max_connections = 100 (term %d): committed\n", n1.term())

	// 2. node-1 is cut off from the lock service, not from the database.
	svc.Partition("node-1")
	fmt.Fprintf(out, "\nnode-1  is cut off from the lock service (it still reaches the database): its renewals are lost\n")

	// 3. node-2's election timeout fires first: it campaigns and waits for the lock,
	// which the service frees when node-1's lease expires.
	fmt.Fprintf(out, "node-2  hears no leader, its election timeout fires: it campaigns and waits for the lock\n")
	lease, err := n2.locks.Acquire(ctx, lockKey)
	if err != nil {
		return fmt.Errorf("node-2: campaign: %w", err)
	}
	n2.lease = lease
	fmt.Fprintf(out, "node-2  wins the election once node-1's lease expires at the lock service: term %d\n", n2.term())
	if err := campaign(ctx, out, n3); err != nil {
		return err
	}
	if err := takeOffice(ctx, db, n2); err != nil {
		return fmt.Errorf("node-2: take office: %w", err)
	}
	fmt.Fprintf(out, "node-2  takes office: writes leader=node-2, term=%d into cluster_state\n", n2.term())
	if err := setMaxConnections(ctx, db, n2, 200); err != nil {
		return fmt.Errorf("node-2: %w", err)
	}
	fmt.Fprintf(out, "node-2  sets max_connections = 200 (term %d): committed\n", n2.term())

	// 4. The deposed leader writes. Its own lock client already gave the lease up at
	// the local deadline, so through fencedsql.WithLease the write is refused before it
	// is sent. But that check is racy (a pause can fall right after it, with the write
	// already on its way), so the write that matters is the one that got past it: it
	// carries only the term, and the database refuses it.
	fmt.Fprintf(out, "\nnode-1  still believes it leads and sets max_connections = 50 (term %d)\n", n1.term())
	if err := setMaxConnections(ctx, db, n1, 50); errors.Is(err, lockclient.ErrLeaseLost) {
		fmt.Fprintf(out, "        refused by its own client before anything was sent: %v\n", err)
	} else {
		return fmt.Errorf("node-1 with its lost lease: err = %v, want ErrLeaseLost", err)
	}
	fmt.Fprintf(out, "node-1  the same write already past that check (a pause right after it) carries only term %d\n", n1.term())
	err = write(fencedsql.WithToken(ctx, n1.term()), db, `UPDATE cluster_state SET max_connections = ? WHERE id = 1`, 50)
	switch {
	case errors.Is(err, fencedsql.ErrFenced):
		fmt.Fprintf(out, "        refused by the database: %v\n", err)
		fmt.Fprintf(out, "node-1  steps down: a newer term owns the state\n")
	case err == nil:
		return errors.New("the deposed leader's write committed: fencing did not hold")
	default:
		return fmt.Errorf("node-1: %w", err)
	}
	<-n1.lease.Lost() // its own lock client gave up at the local deadline
	svc.Heal("node-1")
	_ = n1.lease.Release(context.WithoutCancel(ctx))
	n1.lease = nil
	fmt.Fprintf(out, "node-1  rejoins after the partition heals\n")
	if err := campaign(ctx, out, n1); err != nil {
		return err
	}

	// The outcome.
	var leader string
	var term, maxConns, token int64
	if err := admin.QueryRowContext(ctx, `SELECT leader, term, max_connections, fence_token FROM cluster_state WHERE id = 1`).
		Scan(&leader, &term, &maxConns, &token); err != nil {
		return err
	}
	fmt.Fprintf(out, "\ncluster_state: leader %s, term %d, max_connections %d, fence_token %d: the deposed leader changed nothing\n",
		leader, term, maxConns, token)
	if leader != "node-2" || uint64(term) != n2.term() || maxConns != 200 || uint64(token) != n2.term() {
		return fmt.Errorf("cluster_state: leader %s, term %d, max_connections %d, fence_token %d; want node-2, term %d, 200",
			leader, term, maxConns, token, n2.term())
	}
	_ = n2.lease.Release(context.WithoutCancel(ctx))
	return nil
}

// campaign makes one attempt to become leader: n wins, or stays a follower when
// another node holds the lock.
func campaign(ctx context.Context, out io.Writer, n *node) error {
	lease, err := n.locks.TryAcquire(ctx, lockKey)
	switch {
	case err == nil:
		n.lease = lease
		fmt.Fprintf(out, "%s  campaigns: wins, leader for term %d\n", n.name, n.term())
	case errors.Is(err, lockclient.ErrHeld):
		fmt.Fprintf(out, "%s  campaigns: the lock is held, stays a follower\n", n.name)
	default:
		return fmt.Errorf("%s: campaign: %w", n.name, err)
	}
	return nil
}

// takeOffice stamps the state row with n's name and term. Through the fenced driver
// the row's fence_token becomes the term, so from now on every older term is refused.
func takeOffice(ctx context.Context, db *sql.DB, n *node) error {
	return write(fencedsql.WithLease(ctx, n.lease), db,
		`UPDATE cluster_state SET leader = ?, term = ? WHERE id = 1`, n.name, int64(n.term()))
}

func setMaxConnections(ctx context.Context, db *sql.DB, n *node, v int) error {
	return write(fencedsql.WithLease(ctx, n.lease), db,
		`UPDATE cluster_state SET max_connections = ? WHERE id = 1`, v)
}

// write runs one statement in a short transaction bound to ctx's lease.
func write(ctx context.Context, db *sql.DB, query string, args ...any) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
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

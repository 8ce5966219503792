package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// workerEnv is the environment variable through which the coordinator of process mode
// (-procs) starts the drill's own executable as a worker: it holds the workerSpec as
// JSON. The worker reports on stdout, one procEvent per line.
const workerEnv = "FENCEDSQL_DRILL_WORKER"

// workerSpec is what one worker process is told.
type workerSpec struct {
	Index      int      `json:"index"`
	Run        string   `json:"run"`         // "unfenced" or "fenced"
	Driver     string   `json:"driver"`      // sqlite, postgres or mysql
	DriverName string   `json:"driver_name"` // database/sql name: plain or fenced
	DSN        string   `json:"dsn"`
	Table      string   `json:"table"`
	Accounts   int      `json:"accounts"`
	Locks      string   `json:"locks"`      // mem (the coordinator's lock server), etcd, etcd-embedded
	LockAddrs  []string `json:"lock_addrs"` // this worker's proxies, one per lock service endpoint
	LockPrefix string   `json:"lock_prefix,omitempty"`
	TTL        int64    `json:"ttl_ns"`
	Work       int64    `json:"work_ns"`
	Rounds     int      `json:"rounds"`             // 0: until Duration
	Duration   int64    `json:"duration,omitempty"` // ns from "go"; 0: no limit
	Seed       uint64   `json:"seed"`
	Bind       string   `json:"bind"`
	Workload   string   `json:"workload,omitempty"` // "" or increment; transfer (transfer.go)
}

// procEvent is one line a worker writes on stdout.
type procEvent struct {
	T    int64  `json:"t"`  // unix ns
	Ev   string `json:"ev"` // ready, grant, release, lost, read, attempt, error, done, fatal
	Acct int64  `json:"acct,omitempty"`
	Tok  uint64 `json:"tok,omitempty"`
	Att  int64  `json:"att,omitempty"`
	// attempt: the write as the worker saw it.
	Read  int64  `json:"read,omitempty"`
	Wrote int64  `json:"wrote,omitempty"`
	Out   string `json:"out,omitempty"`
	Err   string `json:"err,omitempty"`
	Lost  int64  `json:"lost,omitempty"` // release/lost: when the lease's Lost channel closed (unix ns)
	// attempt of a transfer: Acct is the debited account, To the credited one; Read and
	// Wrote are Acct's balance before and after, ToRead To's balance before.
	To     int64 `json:"to,omitempty"`
	ToRead int64 `json:"to_read,omitempty"`
	Amount int64 `json:"amount,omitempty"`
	Second bool  `json:"second,omitempty"` // grant: a transfer's second lease (the round was counted at the first)
}

// emitter writes events on stdout, one JSON object per line.
type emitter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (e *emitter) emit(ev procEvent) {
	if ev.T == 0 {
		ev.T = time.Now().UnixNano()
	}
	e.mu.Lock()
	_ = e.enc.Encode(ev)
	e.mu.Unlock()
}

// workerMain is the worker process: it runs its rounds and exits. The exit status is 0
// unless it could not start.
func workerMain(specJSON string, stdin io.Reader, stdout io.Writer) int {
	out := &emitter{enc: json.NewEncoder(stdout)}
	var spec workerSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		out.emit(procEvent{Ev: "fatal", Err: "bad worker spec: " + err.Error()})
		return exitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := runWorkerProcess(ctx, spec, stdin, out); err != nil {
		out.emit(procEvent{Ev: "fatal", Err: err.Error()})
		return exitError
	}
	out.emit(procEvent{Ev: "done"})
	return exitOK
}

func runWorkerProcess(ctx context.Context, spec workerSpec, stdin io.Reader, out *emitter) error {
	be, ok := backends[spec.Driver]
	if !ok {
		return fmt.Errorf("unknown driver %q", spec.Driver)
	}
	db, err := sql.Open(spec.DriverName, spec.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	backend, closeLocks, err := workerBackend(spec)
	if err != nil {
		return err
	}
	defer closeLocks()
	owner := fmt.Sprintf("%s-worker-%d", spec.Run, spec.Index)
	client := lockclient.New(backend, lockclient.WithTTL(time.Duration(spec.TTL)), lockclient.WithOwner(owner))
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = client.Close(closeCtx)
	}()
	w := &procWorker{spec: spec, db: db, client: client, out: out, q: newProcStatements(spec.Table, be)}
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("connecting to the database: %w", err)
	}
	out.emit(procEvent{Ev: "ready"})
	// Wait for the coordinator's "go" (every worker is ready); EOF: it is gone.
	if line, err := bufio.NewReader(stdin).ReadString('\n'); err != nil || line != "go\n" {
		return errors.New("no go from the coordinator")
	}
	rng := rand.New(rand.NewPCG(spec.Seed, uint64(spec.Index)))
	var deadline time.Time
	if spec.Duration != 0 {
		deadline = time.Now().Add(time.Duration(spec.Duration))
	}
	for i := 0; spec.Rounds == 0 || i < spec.Rounds; i++ {
		if ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(deadline)) {
			break
		}
		if spec.Workload == workloadTransfer {
			w.transferRound(ctx, int64(i+1), nextTransfer(rng, spec))
			continue
		}
		acct := int64(1 + rng.IntN(max(spec.Accounts, 1)))
		work := time.Duration(float64(spec.Work) * (0.5 + rng.Float64()))
		w.round(ctx, int64(i+1), acct, work)
	}
	return nil
}

// workerBackend connects to the lock service through the worker's proxies.
func workerBackend(spec workerSpec) (lockclient.Backend, func(), error) {
	switch spec.Locks {
	case locksMem:
		rl := newRemoteLocks(spec.LockAddrs[0])
		return rl, rl.close, nil
	case locksEtcd, locksEtcdEmbedded:
		cli, err := clientv3.New(clientv3.Config{Endpoints: spec.LockAddrs, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, nil, fmt.Errorf("etcd client: %w", err)
		}
		b := etcdlock.New(cli, etcdlock.WithPrefix(spec.LockPrefix), etcdlock.WithRequestTimeout(etcdRequestTimeout))
		return b, func() { cli.Close() }, nil
	}
	return nil, nil, fmt.Errorf("-locks %s is not supported in process mode", spec.Locks)
}

type procWorker struct {
	spec   workerSpec
	db     *sql.DB
	client *lockclient.Client
	out    *emitter
	q      procStatements
}

// round is one critical section: acquire, claim and read (recorded), check the lease,
// compute (work), write (recorded), release.
func (w *procWorker) round(ctx context.Context, att, acct int64, work time.Duration) {
	key := fmt.Sprintf("account:%d", acct)
	lease, err := w.client.Acquire(ctx, key)
	if err != nil {
		if ctx.Err() == nil {
			w.out.emit(procEvent{Ev: "error", Acct: acct, Att: att, Err: "acquire: " + err.Error()})
		}
		return
	}
	tok := lease.Token()
	w.out.emit(procEvent{Ev: "grant", Acct: acct, Tok: tok, Att: att})
	lostAt := make(chan int64, 1)
	go func() {
		<-lease.Lost()
		lostAt <- time.Now().UnixNano()
	}()
	defer w.release(ctx, lease, acct, att, lostAt)
	bound := fencedsql.WithToken(ctx, tok)
	if w.spec.Bind == "lease" {
		bound = fencedsql.WithLease(ctx, lease)
	}

	bal, err := w.read(bound, acct, att, tok)
	if err != nil {
		switch {
		case errors.Is(err, fencedsql.ErrFenced):
			// The claim was refused: a newer holder already claimed the row, so this
			// lease was stale before its first write. Nothing was changed.
			w.out.emit(procEvent{Ev: "read", Acct: acct, Tok: tok, Att: att, Out: outFenced})
		case ctx.Err() == nil:
			w.out.emit(procEvent{Ev: "error", Acct: acct, Tok: tok, Att: att, Err: "read: " + err.Error()})
		}
		return
	}
	w.out.emit(procEvent{Ev: "read", Acct: acct, Tok: tok, Att: att, Read: bal})

	// The lease check: a careful client does not write on a lease it knows is lost.
	// Err also enforces the local deadline, so a pause before this line is caught here.
	if err := lease.Err(); err != nil {
		w.out.emit(procEvent{Ev: "attempt", Acct: acct, Tok: tok, Att: att, Read: bal, Wrote: bal + 1, Out: outSkipped})
		return
	}
	// The computation between the check and the write: a pause here (a GC, a throttled
	// container, SIGSTOP) is invisible to the check above.
	if !sleep(ctx, work) {
		return
	}
	err = w.write(bound, acct, att, tok, bal, bal+1)
	ev := procEvent{Ev: "attempt", Acct: acct, Tok: tok, Att: att, Read: bal, Wrote: bal + 1}
	switch {
	case err == nil:
		ev.Out = outCommitted
	case errors.Is(err, fencedsql.ErrFenced):
		ev.Out = outFenced
	case errors.Is(err, lockclient.ErrLeaseLost):
		ev.Out = outRefused
	default:
		ev.Out, ev.Err = outError, err.Error()
	}
	w.out.emit(ev)
}

// read claims account acct with the transaction's token, reads its balance and records
// the read in the history, in one transaction.
func (w *procWorker) read(ctx context.Context, acct, att int64, tok uint64) (int64, error) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	if w.q.stamp != "" {
		if _, err := tx.ExecContext(ctx, w.q.stamp, acct); err != nil {
			return 0, err
		}
	}
	var bal int64
	if err := tx.QueryRowContext(ctx, w.q.read, acct).Scan(&bal); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, w.q.record, acct, w.spec.Index, att, "read", int64(tok), bal, nil); err != nil {
		return 0, err
	}
	return bal, tx.Commit()
}

// write sets the balance and records the write in the history, in one transaction.
func (w *procWorker) write(ctx context.Context, acct, att int64, tok uint64, read, bal int64) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
	if _, err := tx.ExecContext(ctx, w.q.update, bal, acct); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, w.q.record, acct, w.spec.Index, att, "write", int64(tok), read, bal); err != nil {
		return err
	}
	return tx.Commit()
}

func (w *procWorker) release(ctx context.Context, lease *lockclient.Lease, acct, att int64, lostAt <-chan int64) {
	lostBefore := lease.Err() != nil
	releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := lease.Release(releaseCtx)
	end := <-lostAt
	ev := procEvent{Ev: "release", Acct: acct, Tok: lease.Token(), Att: att}
	switch {
	case lostBefore:
		ev.Ev, ev.Lost = "lost", end
	case errors.Is(err, lockclient.ErrLeaseLost), errors.Is(err, lockclient.ErrNotOwner):
		ev.Ev = "lost" // the service had already expired it
	case errors.Is(err, lockclient.ErrUnavailable):
		ev.Err = "unconfirmed: " + err.Error()
	case err != nil:
		ev.Err = err.Error()
	}
	w.out.emit(ev)
}

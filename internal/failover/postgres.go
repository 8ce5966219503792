package failover

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// pgNode is one PostgreSQL server of a pair.
type pgNode struct {
	dir  string // its directory: data/, the socket, the log
	port int
	srv  *server
}

func (n *pgNode) data() string { return filepath.Join(n.dir, "data") }

func (n *pgNode) dsn() string {
	return fmt.Sprintf("postgres://fenced@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", n.port)
}

// PostgresPair is a PostgreSQL primary and streaming replica (see Pair). The cluster
// trusts every loopback login of the superuser fenced (a throwaway test cluster).
type PostgresPair struct {
	env     Env
	mode    Mode
	as      runAs
	dir     string
	seq     int
	primary *pgNode
	replica *pgNode
}

var _ Pair = (*PostgresPair)(nil)

// NewPostgres initialises a primary (initdb), starts it and builds its replica
// (pg_basebackup -R), under a fresh directory in env.Dir. Close it when done.
func NewPostgres(ctx context.Context, env Env, mode Mode) (*PostgresPair, error) {
	as, err := lookupRunAs("postgres")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(env.Dir, "pg-"+string(mode)+"-")
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	p := &PostgresPair{env: env, mode: mode, as: as, dir: dir}
	if err := as.mkdir(dir); err != nil {
		p.Close()
		return nil, fmt.Errorf("failover: %w", err)
	}
	n, err := p.newNode()
	if err != nil {
		p.Close()
		return nil, err
	}
	if err := as.run(ctx, filepath.Join(n.dir, "initdb.log"), filepath.Join(env.PGBin, "initdb"), "-D", n.data(),
		"-U", "fenced", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"); err != nil {
		p.Close()
		return nil, err
	}
	if err := p.start(ctx, n); err != nil {
		p.Close()
		return nil, err
	}
	p.primary = n
	if err := p.Rebuild(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *PostgresPair) newNode() (*pgNode, error) {
	p.seq++
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n := &pgNode{dir: filepath.Join(p.dir, "n"+strconv.Itoa(p.seq)), port: port}
	if err := p.as.mkdir(n.dir); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	return n, nil
}

// start runs the server of n and waits until it answers. The settings are the
// command line's, so that they are the same on every node whatever was copied; the
// synchronous standby list is not among them: ALTER SYSTEM sets and resets it.
// fsync is off: the harness crashes processes, not the machine, and the kernel keeps
// what a killed server wrote.
func (p *PostgresPair) start(ctx context.Context, n *pgNode) error {
	srv, err := p.as.start(filepath.Join(n.dir, "postgres.log"), filepath.Join(p.env.PGBin, "postgres"), "-D", n.data(),
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(n.port), "-c", "unix_socket_directories="+n.dir,
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=40", "-c", "shared_buffers=16MB",
		"-c", "synchronous_commit=on", "-c", "wal_level=replica", "-c", "max_wal_senders=4",
		"-c", "wal_receiver_status_interval=1s", "-c", "wal_retrieve_retry_interval=50ms", "-c", "log_min_messages=warning")
	if err != nil {
		return err
	}
	n.srv = srv
	return waitFor(ctx, "PostgreSQL on port "+strconv.Itoa(n.port)+" answering", srv, func(ctx context.Context) error {
		return pgDo(ctx, n.dsn(), func(db *sql.DB) error { return db.PingContext(ctx) })
	})
}

// pgDo runs f on a one-connection pool to dsn.
func pgDo(ctx context.Context, dsn string, f func(*sql.DB) error) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return f(db)
}

// DSN implements Pair.
func (p *PostgresPair) DSN() string { return p.primary.dsn() }

// Rebuild implements Pair: pg_basebackup -R of the primary, started as its streaming
// replica; in Sync mode the primary then lists it in synchronous_standby_names ('*')
// and the call returns once pg_stat_replication reports it sync.
func (p *PostgresPair) Rebuild(ctx context.Context) error {
	if p.replica != nil {
		return fmt.Errorf("failover: Rebuild: the pair already has a replica")
	}
	n, err := p.newNode()
	if err != nil {
		return err
	}
	if err := p.as.run(ctx, filepath.Join(n.dir, "basebackup.log"), filepath.Join(p.env.PGBin, "pg_basebackup"),
		"-h", "127.0.0.1", "-p", strconv.Itoa(p.primary.port), "-U", "fenced", "-D", n.data(),
		"-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		return err
	}
	if err := p.start(ctx, n); err != nil {
		n.srv.kill()
		return err
	}
	p.replica = n
	want := "async"
	if p.mode == Sync {
		// Constant SQL text: ALTER SYSTEM takes no parameters.
		err := pgDo(ctx, p.primary.dsn(), func(db *sql.DB) error {
			if _, err := db.ExecContext(ctx, `ALTER SYSTEM SET synchronous_standby_names = '*'`); err != nil {
				return err
			}
			_, err := db.ExecContext(ctx, `SELECT pg_reload_conf()`)
			return err
		})
		if err != nil {
			return fmt.Errorf("failover: making the replica synchronous: %w", err)
		}
		want = "sync"
	}
	return waitFor(ctx, "the replica streaming ("+want+")", p.primary.srv, func(ctx context.Context) error {
		return pgDo(ctx, p.primary.dsn(), func(db *sql.DB) error {
			var state, sync string
			err := db.QueryRowContext(ctx, `SELECT state, sync_state FROM pg_stat_replication LIMIT 1`).Scan(&state, &sync)
			if err != nil {
				return err
			}
			if state != "streaming" || sync != want {
				return fmt.Errorf("replication state %s, sync_state %s", state, sync)
			}
			return nil
		})
	})
}

// Failover implements Pair: SIGKILL of the primary's process group, then
// pg_promote(wait => true) on the replica; in Sync mode the new primary's
// synchronous_standby_names is reset (as Patroni does when no standby is left), else
// its commits would wait for a standby that does not exist yet.
func (p *PostgresPair) Failover(ctx context.Context) error {
	if p.replica == nil {
		return fmt.Errorf("failover: Failover: the pair has no replica")
	}
	old := p.primary
	if err := old.srv.kill(); err != nil {
		return err
	}
	removeSysVShm(old.data())
	err := pgDo(ctx, p.replica.dsn(), func(db *sql.DB) error {
		var ok bool
		if err := db.QueryRowContext(ctx, `SELECT pg_promote(true, 60)`).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("pg_promote returned false")
		}
		if p.mode == Sync {
			if _, err := db.ExecContext(ctx, `ALTER SYSTEM RESET synchronous_standby_names`); err != nil {
				return err
			}
			if _, err := db.ExecContext(ctx, `SELECT pg_reload_conf()`); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("failover: promoting the replica: %w%s", err, logTail(p.replica.srv.log))
	}
	p.primary, p.replica = p.replica, nil
	return os.RemoveAll(old.dir)
}

// Close implements Pair.
func (p *PostgresPair) Close() error {
	var first error
	for _, n := range []*pgNode{p.primary, p.replica} {
		if n == nil || n.srv == nil {
			continue
		}
		if err := n.srv.kill(); err != nil && first == nil {
			first = err
		}
		removeSysVShm(n.data())
	}
	if err := os.RemoveAll(p.dir); err != nil && first == nil {
		first = err
	}
	return first
}

// removeSysVShm removes the small System V shared memory segment a killed postmaster
// leaves behind (its id is on line 7 of postmaster.pid), with ipcrm, best effort.
func removeSysVShm(data string) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return
	}
	_ = exec.Command("ipcrm", "-m", f[1]).Run()
}

// Detach cuts the replica off the primary (primary_conninfo emptied, the WAL receiver
// gone): what the primary commits from now on never reaches it. Async mode only (a
// synchronous primary would wait for it forever).
func (p *PostgresPair) Detach(ctx context.Context) error {
	if p.mode == Sync {
		return fmt.Errorf("failover: Detach: a synchronous primary would wait forever")
	}
	err := pgDo(ctx, p.replica.dsn(), func(db *sql.DB) error {
		if _, err := db.ExecContext(ctx, `ALTER SYSTEM SET primary_conninfo = ''`); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `SELECT pg_reload_conf()`)
		return err
	})
	if err != nil {
		return err
	}
	return waitFor(ctx, "the WAL receiver gone", p.replica.srv, func(ctx context.Context) error {
		return pgDo(ctx, p.replica.dsn(), func(db *sql.DB) error {
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_wal_receiver`).Scan(&n); err != nil {
				return err
			}
			if n != 0 {
				return fmt.Errorf("WAL receiver still running")
			}
			return nil
		})
	})
}

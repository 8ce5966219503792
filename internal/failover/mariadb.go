package failover

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	_ "github.com/go-sql-driver/mysql" // registers the "mysql" database/sql driver
)

// Database is the test database of a MariaDB pair.
const mariaDBDatabase = "failover"

// password of the throwaway servers' account fenced.
const password = "fenced"

// MariaDBTemplate is an initialised MariaDB data directory (system tables and the
// account fenced, no binary log) that every node of a MariaDBPair starts from: one
// mariadb-install-db per test instead of one per node.
type MariaDBTemplate struct {
	env Env
	as  runAs
	dir string
}

// NewMariaDBTemplate runs mariadb-install-db into a fresh directory in env.Dir, starts
// the server once to create the account fenced (all privileges, from any host), and
// shuts it down cleanly. Close it when done.
func NewMariaDBTemplate(ctx context.Context, env Env) (*MariaDBTemplate, error) {
	as, err := lookupRunAs("mysql")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(env.Dir, "mariadb-template-")
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	t := &MariaDBTemplate{env: env, as: as, dir: dir}
	if err := as.mkdir(dir); err != nil {
		t.Close()
		return nil, fmt.Errorf("failover: %w", err)
	}
	// The bootstrap server gets its own tmpdir: a MariaDB server deletes every "#sql*"
	// file in its tmpdir when it starts, so two bootstraps sharing /tmp (parallel tests,
	// another package's servers) remove each other's temporary tables mid-install
	// ("Could not remove temporary table", then "Unknown table 'mysql.tmp_user_sys'").
	tmp := filepath.Join(dir, "tmp")
	if err := as.mkdir(tmp); err != nil {
		t.Close()
		return nil, fmt.Errorf("failover: %w", err)
	}
	if err := as.run(ctx, filepath.Join(dir, "install-db.log"), env.InstallDB, "--no-defaults",
		"--datadir="+t.data(), "--auth-root-authentication-method=socket", "--skip-test-db",
		"--skip-name-resolve", "--innodb-log-file-size=8M", "--tmpdir="+tmp); err != nil {
		t.Close()
		return nil, err
	}
	init := filepath.Join(dir, "init.sql")
	sqlText := "DELETE FROM mysql.global_priv WHERE User = '';\nFLUSH PRIVILEGES;\n"
	for _, h := range []string{"localhost", "127.0.0.1", "%"} {
		sqlText += fmt.Sprintf("CREATE USER IF NOT EXISTS 'fenced'@'%s' IDENTIFIED BY '%s';\n"+
			"GRANT ALL PRIVILEGES ON *.* TO 'fenced'@'%s' WITH GRANT OPTION;\n", h, password, h)
	}
	if err := os.WriteFile(init, []byte(sqlText+"FLUSH PRIVILEGES;\n"), 0o600); err != nil {
		t.Close()
		return nil, fmt.Errorf("failover: %w", err)
	}
	if as.set {
		if err := os.Chown(init, int(as.uid), int(as.gid)); err != nil {
			t.Close()
			return nil, fmt.Errorf("failover: %w", err)
		}
	}
	n := &myNode{dir: dir}
	if n.port, err = freePort(); err != nil {
		t.Close()
		return nil, err
	}
	if err := startMariaDB(ctx, env, as, n, "--skip-log-bin", "--init-file="+init); err != nil {
		t.Close()
		return nil, err
	}
	if err := n.srv.stop(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func (t *MariaDBTemplate) data() string { return filepath.Join(t.dir, "data") }

// Close removes the template.
func (t *MariaDBTemplate) Close() error { return os.RemoveAll(t.dir) }

// myNode is one MariaDB server.
type myNode struct {
	dir  string // data/, tmp/, the socket, pid file and logs
	port int
	id   int // server_id
	srv  *server
}

func (n *myNode) dsn(db string) string {
	return fmt.Sprintf("fenced:%s@tcp(127.0.0.1:%d)/%s?parseTime=true&timeout=5s", password, n.port, db)
}

// startMariaDB starts a server on n's data directory and waits until the account
// fenced can run a query over TCP. InnoDB writes its log at each commit and syncs it
// once a second (the harness kills processes, not the machine: the kernel keeps what
// was written).
func startMariaDB(ctx context.Context, env Env, as runAs, n *myNode, extra ...string) error {
	tmp := filepath.Join(n.dir, "tmp")
	if err := as.mkdir(tmp); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	args := append([]string{"--no-defaults", "--datadir=" + filepath.Join(n.dir, "data"), "--tmpdir=" + tmp,
		"--socket=" + filepath.Join(n.dir, "mysqld.sock"), "--port=" + strconv.Itoa(n.port), "--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(n.dir, "mariadbd.pid"), "--log-error=" + filepath.Join(n.dir, "mariadbd.err"),
		"--skip-name-resolve", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
		"--max-connections=60", "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M",
		"--innodb-flush-log-at-trx-commit=2", "--innodb-doublewrite=0"}, extra...)
	srv, err := as.start(filepath.Join(n.dir, "mariadbd.out"), env.MySQLD, args...)
	if err != nil {
		return err
	}
	srv.log = filepath.Join(n.dir, "mariadbd.err")
	n.srv = srv
	return waitFor(ctx, "MariaDB on port "+strconv.Itoa(n.port)+" answering", srv, func(ctx context.Context) error {
		return myDo(ctx, n.dsn(""), func(db *sql.DB) error {
			var one int
			return db.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
		})
	})
}

// myDo runs f on a one-connection pool to dsn.
func myDo(ctx context.Context, dsn string, f func(*sql.DB) error) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return f(db)
}

// showRow runs a SHOW statement that returns at most one row and returns it by column
// name (nil when it returns no row).
func showRow(ctx context.Context, db *sql.DB, query string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	m := make(map[string]string, len(cols))
	for i, c := range cols {
		m[c] = vals[i].String
	}
	return m, rows.Err()
}

// MariaDBPair is a MariaDB primary and replica with GTID replication (see Pair). Every
// node writes a binary log with log_slave_updates and gtid_strict_mode, so a promoted
// replica serves the whole history to the next one.
type MariaDBPair struct {
	env     Env
	mode    Mode
	tmpl    *MariaDBTemplate
	dir     string
	seq     int
	primary *myNode
	replica *myNode
}

var _ Pair = (*MariaDBPair)(nil)

// NewMariaDB starts a primary from the template, creates the database "failover" on it
// and builds its replica. Close it when done (the template is not closed).
func NewMariaDB(ctx context.Context, tmpl *MariaDBTemplate, mode Mode) (*MariaDBPair, error) {
	dir, err := os.MkdirTemp(tmpl.env.Dir, "mariadb-"+string(mode)+"-")
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	p := &MariaDBPair{env: tmpl.env, mode: mode, tmpl: tmpl, dir: dir}
	if err := tmpl.as.mkdir(dir); err != nil {
		p.Close()
		return nil, fmt.Errorf("failover: %w", err)
	}
	n, err := p.startNode(ctx)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.primary = n
	err = myDo(ctx, n.dsn(""), func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+mariaDBDatabase+"`")
		return err
	})
	if err == nil {
		err = p.Rebuild(ctx)
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// startNode copies the template into a new node directory and starts it.
func (p *MariaDBPair) startNode(ctx context.Context) (*myNode, error) {
	p.seq++
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n := &myNode{dir: filepath.Join(p.dir, "n"+strconv.Itoa(p.seq)), port: port, id: p.seq}
	as := p.tmpl.as
	if err := as.mkdir(n.dir); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	if err := as.run(ctx, filepath.Join(p.dir, "cp.log"), "cp", "-a", p.tmpl.data(), filepath.Join(n.dir, "data")); err != nil {
		return nil, err
	}
	args := []string{"--server-id=" + strconv.Itoa(n.id), "--log-bin=mysql-bin", "--relay-log=relay-bin",
		"--log-slave-updates", "--gtid-strict-mode=ON", "--binlog-format=ROW", "--sync-binlog=0",
		"--skip-slave-start"}
	if p.mode == Sync {
		args = append(args, "--rpl-semi-sync-slave-enabled=ON", "--rpl-semi-sync-master-wait-point=AFTER_SYNC",
			"--rpl-semi-sync-master-timeout=4294967295")
	}
	if err := startMariaDB(ctx, p.env, as, n, args...); err != nil {
		if n.srv != nil {
			n.srv.kill()
		}
		return nil, err
	}
	return n, nil
}

// DSN implements Pair.
func (p *MariaDBPair) DSN() string { return p.primary.dsn(mariaDBDatabase) }

// Rebuild implements Pair: a fresh data directory (the template) replicating from the
// primary with CHANGE MASTER … MASTER_USE_GTID = slave_pos, read_only; in Sync mode the
// primary enables semi-sync first and the call returns once the replica is a semi-sync
// client; in both modes once the replica has applied the primary's whole binary log.
func (p *MariaDBPair) Rebuild(ctx context.Context) error {
	if p.replica != nil {
		return fmt.Errorf("failover: Rebuild: the pair already has a replica")
	}
	n, err := p.startNode(ctx)
	if err != nil {
		return err
	}
	p.replica = n
	if p.mode == Sync {
		err := myDo(ctx, p.primary.dsn(""), func(db *sql.DB) error {
			_, err := db.ExecContext(ctx, `SET GLOBAL rpl_semi_sync_master_enabled = ON`)
			return err
		})
		if err != nil {
			return fmt.Errorf("failover: enabling semi-sync: %w", err)
		}
	}
	// CHANGE MASTER takes no parameters: the port is an int, the rest constants.
	err = myDo(ctx, n.dsn(""), func(db *sql.DB) error {
		for _, s := range []string{
			`SET GLOBAL read_only = ON`,
			fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'fenced', "+
				"MASTER_PASSWORD = '%s', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1", p.primary.port, password),
			`START SLAVE`,
		} {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("failover: starting the replica: %w", err)
	}
	var pos string
	err = myDo(ctx, p.primary.dsn(""), func(db *sql.DB) error {
		return db.QueryRowContext(ctx, `SELECT @@GLOBAL.gtid_binlog_pos`).Scan(&pos)
	})
	if err != nil {
		return fmt.Errorf("failover: reading the primary's position: %w", err)
	}
	if err := p.applied(ctx, n, pos); err != nil {
		return err
	}
	if p.mode != Sync {
		return nil
	}
	return waitFor(ctx, "the replica a semi-sync client", p.primary.srv, func(ctx context.Context) error {
		return myDo(ctx, p.primary.dsn(""), func(db *sql.DB) error {
			var status, clients string
			err := db.QueryRowContext(ctx, `SELECT
				(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_STATUS'),
				(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_CLIENTS')`).
				Scan(&status, &clients)
			if err != nil {
				return err
			}
			if status != "ON" || clients != "1" {
				return fmt.Errorf("semi-sync status %s, clients %s", status, clients)
			}
			return nil
		})
	})
}

// applied waits until n's SQL thread has applied every transaction up to GTID
// position pos (MASTER_GTID_WAIT).
func (p *MariaDBPair) applied(ctx context.Context, n *myNode, pos string) error {
	return myDo(ctx, n.dsn(""), func(db *sql.DB) error {
		var r int
		if err := db.QueryRowContext(ctx, `SELECT MASTER_GTID_WAIT(?, 60)`, pos).Scan(&r); err != nil {
			return fmt.Errorf("failover: waiting for the replica to apply %s: %w", pos, err)
		}
		if r != 0 {
			st, _ := showRow(ctx, db, `SHOW SLAVE STATUS`)
			return fmt.Errorf("failover: the replica did not apply %s within 60s (slave status: IO %s, SQL %s, %s)%s",
				pos, st["Slave_IO_Running"], st["Slave_SQL_Running"], st["Last_Error"], logTail(n.srv.log))
		}
		return nil
	})
}

// Failover implements Pair: SIGKILL of the primary, then on the replica the promotion
// in the order that keeps what it received: wait until the relay log is applied
// (START SLAVE SQL_THREAD, MASTER_GTID_WAIT on the received position Gtid_IO_Pos), STOP SLAVE, RESET SLAVE
// ALL, read_only off. The new primary has semi-sync off until Rebuild.
func (p *MariaDBPair) Failover(ctx context.Context) error {
	if p.replica == nil {
		return fmt.Errorf("failover: Failover: the pair has no replica")
	}
	old := p.primary
	if err := old.srv.kill(); err != nil {
		return err
	}
	var received string
	err := myDo(ctx, p.replica.dsn(""), func(db *sql.DB) error {
		st, err := showRow(ctx, db, `SHOW SLAVE STATUS`)
		if err != nil {
			return err
		}
		received = st["Gtid_IO_Pos"]
		return nil
	})
	if err != nil {
		return fmt.Errorf("failover: reading the replica's received position: %w", err)
	}
	// The SQL thread may have stopped (an error, an operator): the relay log is applied
	// only while it runs.
	err = myDo(ctx, p.replica.dsn(""), func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, `START SLAVE SQL_THREAD`)
		return err
	})
	if err != nil {
		return fmt.Errorf("failover: starting the replica's SQL thread: %w", err)
	}
	if err := p.applied(ctx, p.replica, received); err != nil {
		return err
	}
	err = myDo(ctx, p.replica.dsn(""), func(db *sql.DB) error {
		for _, s := range []string{`STOP SLAVE`, `RESET SLAVE ALL`, `SET GLOBAL read_only = OFF`} {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("failover: promoting the replica: %w", err)
	}
	p.primary, p.replica = p.replica, nil
	return os.RemoveAll(old.dir)
}

// Close implements Pair.
func (p *MariaDBPair) Close() error {
	var first error
	for _, n := range []*myNode{p.primary, p.replica} {
		if n == nil || n.srv == nil {
			continue
		}
		if err := n.srv.kill(); err != nil && first == nil {
			first = err
		}
	}
	if err := os.RemoveAll(p.dir); err != nil && first == nil {
		first = err
	}
	return first
}

// Detach cuts the replica off the primary (STOP SLAVE IO_THREAD): what the primary commits from
// now on never reaches it. Async mode only (semi-sync would wait for it until its
// timeout).
func (p *MariaDBPair) Detach(ctx context.Context) error {
	if p.mode == Sync {
		return fmt.Errorf("failover: Detach: a semi-sync primary would wait for the replica")
	}
	return myDo(ctx, p.replica.dsn(""), func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, `STOP SLAVE IO_THREAD`)
		return err
	})
}

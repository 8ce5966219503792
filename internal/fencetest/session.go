package fencetest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// The session suite (docs/design.md G11, issue 11 class 3): a session setting that
// changes how the server reads SQL text, or what it does with the fencing NULL, is
// verified before a guarded write, never presumed. For each setting and each way of
// changing it — SET, SET LOCAL in a transaction, set_config(), SET NAMES, a DSN
// parameter, a prepared SET executed later, dynamic SQL, a function, the raw
// connection — the next guarded write fails with *fencedsql.SessionError (errors.Is
// ErrSchema) without sending the write, and the row is unchanged; setting it back
// makes writes work again. The suite also records the cost of the check: statements
// the wrapper sends per guarded write, which stays one on the happy path once the
// connection has been checked.

// SessionCase is one way of making a session untrustworthy.
type SessionCase struct {
	Name string
	// DSN is a parameter the fenced pool opens with (the change happens at connect);
	// Before, Change and Reset run on the fenced connection.
	DSN string
	// Before runs before the connection's first (successful) guarded write: a
	// statement prepared there (PREPARE … FROM, say) and executed by Change.
	Before []string
	// Prepared: Change[0] is prepared with database/sql before the first guarded
	// write, and executed later (Change then has that one statement).
	Prepared bool
	// InTx: Change and the refused write run in one transaction, rolled back after.
	InTx bool
	// Raw: Change runs on the wrapped driver's own connection (sql.Conn.Raw).
	Raw    bool
	Change []string
	// Dynamic: the pool allows dynamic SQL (fencedsql.WithDynamicSQL), which Change
	// uses (DO, PREPARE/EXECUTE, EXECUTE IMMEDIATE, CALL, compound statements).
	Dynamic bool
	// Setting is the SessionError's Setting.
	Setting string
	// Reset makes the session trustworthy again (none: rolling back InTx does).
	Reset []string
	// RawReset: Reset runs on the wrapped driver's own connection (sql.Conn.Raw), for
	// a setting the wrapper refuses to SET to any value (timestamp, autocommit).
	RawReset bool
	// Harmless: Change does not make the session untrustworthy (a function or
	// procedure whose SET the server undoes); the next write must succeed and cost
	// Cost statements.
	Harmless bool
	Cost     int
}

// RunSession runs the session suite for b, whose fenced pools are opened with
// fencedsql.OpenDB over the raw driver (with a statement counter) and d.
func RunSession(t *testing.T, b Backend, d dialect.Dialect, setupSQL []string, cases []SessionCase) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runSessionCase(t, b, d, setupSQL, c) })
	}
}

type sessionEnv struct {
	*env
	counter *stmtCounter
	fdb     *sql.DB
	conn    *sql.Conn
	connErr error // a DSN setting the pool refused at its first connection (no conn)
}

func newSessionEnv(t *testing.T, b Backend, d dialect.Dialect, setupSQL []string, dsnParam string, dynamic bool) *sessionEnv {
	e := setup(t, b)
	for _, s := range setupSQL {
		if _, err := e.raw.ExecContext(e.ctx, s); err != nil {
			t.Fatalf("setup %q: %v", s, err)
		}
	}
	if _, err := e.raw.ExecContext(e.ctx, e.q("INSERT INTO accounts (id, balance, fence_token, version) VALUES (?, ?, ?, ?)"), 1, 100, 5, 0); err != nil {
		t.Fatal(err)
	}
	dsn := e.dsn
	if dsnParam != "" {
		dsn = WithParam(dsn, dsnParam)
	}
	counter := &stmtCounter{}
	fdb := fencedsql.OpenDB(fencedsql.DSNConnector(&countDriver{d: e.raw.Driver(), c: counter}, dsn),
		fencedsql.WithDialect(d), fencedsql.Guard("accounts"), fencedsql.WithDynamicSQL(dynamic))
	t.Cleanup(func() { fdb.Close() })
	conn, err := fdb.Conn(e.ctx)
	if err != nil && dsnParam != "" {
		// A setting the pool's first connection refuses before it reads its records
		// (MySQL: character_set_results, sql_select_limit: red-team rt40b F3, F4).
		return &sessionEnv{env: e, counter: counter, fdb: fdb, connErr: err}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &sessionEnv{env: e, counter: counter, fdb: fdb, conn: conn}
}

// write runs a guarded UPDATE of row 1 with token tk through the fenced connection (or
// tx), and returns the error and the statements the wrapper sent for it.
func (s *sessionEnv) write(tx *sql.Tx, tk uint64, balance int64) (error, []string) {
	s.counter.reset()
	q := s.q("UPDATE accounts SET balance = ? WHERE id = ?")
	var err error
	if tx != nil {
		_, err = tx.ExecContext(tok(s.ctx, tk), q, balance, 1)
	} else {
		_, err = s.conn.ExecContext(tok(s.ctx, tk), q, balance, 1)
	}
	return err, s.counter.sent()
}

func (s *sessionEnv) exec(q string) {
	s.t.Helper()
	if _, err := s.conn.ExecContext(s.ctx, q); err != nil {
		s.t.Fatalf("%q: %v", q, err)
	}
}

// rawExec runs qs on the wrapped driver's own connection (sql.Conn.Raw), unseen by
// the wrapper's statement checks.
func (s *sessionEnv) rawExec(qs []string) error {
	return s.conn.Raw(func(dc any) error {
		u, ok := dc.(interface{ Raw() driver.Conn })
		if !ok {
			return errors.New("the fenced connection does not expose the driver's (Raw)")
		}
		ex, ok := u.Raw().(driver.ExecerContext)
		if !ok {
			return errors.New("the driver's connection has no ExecContext")
		}
		for _, q := range qs {
			if _, err := ex.ExecContext(s.ctx, q, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// reset runs c.Reset, through the wrapper or (RawReset) on the driver's connection.
func (s *sessionEnv) reset(c SessionCase) {
	s.t.Helper()
	if c.RawReset {
		if err := s.rawExec(c.Reset); err != nil {
			s.t.Fatalf("reset %q on the raw connection: %v", c.Reset, err)
		}
		return
	}
	for _, q := range c.Reset {
		s.exec(q)
	}
}

func runSessionCase(t *testing.T, b Backend, d dialect.Dialect, setupSQL []string, c SessionCase) {
	s := newSessionEnv(t, b, d, setupSQL, c.DSN, c.Dynamic)
	if c.DSN != "" && s.connErr != nil {
		// Refused at connect, before the pool read what it guards: nothing ran.
		s.wantRefused(s.connErr, nil, c.Setting, 100, 5)
		return
	}
	if c.DSN != "" {
		// The setting took effect at connect: the first guarded write is refused.
		err, sent := s.write(nil, 7, 999)
		s.wantRefused(err, sent, c.Setting, 100, 5)
		s.reset(c)
		err, sent = s.write(nil, 7, 999)
		if err != nil {
			t.Fatalf("after reset: %v", err)
		}
		t.Logf("cost: first write after the reset: %d statements %q", len(sent), sent)
		s.wantRow(999, 7)
		return
	}
	for _, q := range c.Before {
		s.exec(q)
	}
	var prepared *sql.Stmt
	if c.Prepared {
		st, err := s.conn.PrepareContext(s.ctx, c.Change[0])
		if err != nil {
			t.Fatalf("prepare %q: %v", c.Change[0], err)
		}
		defer st.Close()
		prepared = st
	}
	// The happy path: the first guarded write checks the session (and the table), the
	// next one is a single statement.
	err, first := s.write(nil, 6, 101)
	if err != nil {
		t.Fatalf("first write: %v", err)
	}
	err, steady := s.write(nil, 6, 102)
	if err != nil {
		t.Fatalf("second write: %v", err)
	}
	if len(steady) != 1 {
		t.Fatalf("a guarded write on a checked connection sent %d statements %q, want 1", len(steady), steady)
	}
	t.Logf("cost: first write %d statements %q; then %d", len(first), first, len(steady))

	var tx *sql.Tx
	if c.InTx {
		if tx, err = s.conn.BeginTx(s.ctx, nil); err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
	}
	switch {
	case prepared != nil:
		if _, err := prepared.ExecContext(s.ctx); err != nil {
			t.Fatalf("prepared %q: %v", c.Change[0], err)
		}
	case c.Raw:
		if err := s.rawExec(c.Change); err != nil {
			t.Fatalf("change on the raw connection: %v", err)
		}
	default:
		for _, q := range c.Change {
			var err error
			if tx != nil {
				_, err = tx.ExecContext(s.ctx, q)
			} else {
				_, err = s.conn.ExecContext(s.ctx, q)
			}
			if err != nil {
				t.Fatalf("%q: %v", q, err)
			}
		}
	}

	err, sent := s.write(tx, 7, 999)
	if c.Harmless {
		if err != nil {
			t.Fatalf("write after a harmless %q: %v", c.Change, err)
		}
		if len(sent) != c.Cost {
			t.Fatalf("write after a harmless %q sent %d statements %q, want %d", c.Change, len(sent), sent, c.Cost)
		}
		s.wantRow(999, 7)
		return
	}
	s.wantRefused(err, sent, c.Setting, 102, 6)
	if tx != nil {
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
	s.reset(c)
	err, sent = s.write(nil, 7, 999)
	if err != nil {
		t.Fatalf("after reset: %v", err)
	}
	s.wantRow(999, 7)
	err, steady = s.write(nil, 7, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(steady) != 1 {
		t.Fatalf("a guarded write after the re-check sent %d statements %q, want 1", len(steady), steady)
	}
	t.Logf("cost: first write after the reset %d statements %q; then %d", len(sent), sent, len(steady))
}

// wantRefused checks a refused write: a *SessionError naming setting, no write sent,
// and row 1 unchanged.
// setStatementPrefix is MariaDB's per-statement settings written as an executable
// comment before a statement.
var setStatementPrefix = regexp.MustCompile(`^/\*M!\d+ SET STATEMENT [^*]* FOR \*/\s*`)

func (s *sessionEnv) wantRefused(err error, sent []string, setting string, balance, token int64) {
	s.t.Helper()
	var se *fencedsql.SessionError
	if !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) {
		s.t.Fatalf("err = %v, want a *fencedsql.SessionError (ErrSchema)", err)
	}
	if se.Setting != setting {
		s.t.Fatalf("SessionError.Setting = %q, want %q (%v)", se.Setting, setting, err)
	}
	for _, q := range sent {
		// A read may carry MariaDB's per-statement settings (SET STATEMENT … FOR, an
		// executable comment): still a read.
		q = setStatementPrefix.ReplaceAllString(strings.TrimSpace(q), "")
		if !strings.HasPrefix(q, "SELECT") {
			s.t.Fatalf("a refused write sent %q", q)
		}
	}
	s.t.Logf("refused (%d check statements sent): %v", len(sent), err)
	s.wantRow(balance, token)
}

func (s *sessionEnv) wantRow(balance, token int64) {
	s.t.Helper()
	if r := s.row(1); r.balance != balance || r.token != token {
		s.t.Fatalf("row = %+v, want balance %d token %d", r, balance, token)
	}
}

// stmtCounter records the statements a fenced pool sends through its driver.
type stmtCounter struct {
	mu   sync.Mutex
	list []string
}

func (c *stmtCounter) add(q string) {
	c.mu.Lock()
	c.list = append(c.list, q)
	c.mu.Unlock()
}

func (c *stmtCounter) reset() {
	c.mu.Lock()
	c.list = nil
	c.mu.Unlock()
}

func (c *stmtCounter) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.list...)
}

// countDriver wraps a driver and counts the statements executed on its connections
// (ExecContext, QueryContext, prepared statements' executions; a prepare is not a
// statement). Its connections expose the driver's own with Raw.
type countDriver struct {
	d driver.Driver
	c *stmtCounter
}

func (d *countDriver) Open(name string) (driver.Conn, error) {
	raw, err := d.d.Open(name)
	if err != nil {
		return nil, err
	}
	return &countConn{Conn: raw, c: d.c}, nil
}

type countConn struct {
	driver.Conn
	c *stmtCounter
}

var (
	_ driver.ExecerContext      = (*countConn)(nil)
	_ driver.QueryerContext     = (*countConn)(nil)
	_ driver.ConnPrepareContext = (*countConn)(nil)
	_ driver.ConnBeginTx        = (*countConn)(nil)
	_ driver.NamedValueChecker  = (*countConn)(nil)
	_ driver.SessionResetter    = (*countConn)(nil)
	_ driver.Pinger             = (*countConn)(nil)
)

func (c *countConn) Raw() driver.Conn { return c.Conn }

func (c *countConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	ex, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	res, err := ex.ExecContext(ctx, q, args)
	if err != driver.ErrSkip {
		c.c.add(q)
	}
	return res, err
}

func (c *countConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	qu, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	rows, err := qu.QueryContext(ctx, q, args)
	if err != driver.ErrSkip {
		c.c.add(q)
	}
	return rows, err
}

func (c *countConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, q)
	} else {
		st, err = c.Conn.Prepare(q)
	}
	if err != nil {
		return nil, err
	}
	return &countStmt{Stmt: st, q: q, c: c}, nil
}

func (c *countConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return c.Conn.Begin() //nolint:staticcheck // legacy fallback
}

func (c *countConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *countConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *countConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

type countStmt struct {
	driver.Stmt
	q string
	c *countConn
}

func (s *countStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.c.c.add(s.q)
	if se, ok := s.Stmt.(driver.StmtExecContext); ok {
		return se.ExecContext(ctx, args)
	}
	vals := make([]driver.Value, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	return s.Stmt.Exec(vals) //nolint:staticcheck // legacy fallback
}

func (s *countStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.c.c.add(s.q)
	if sq, ok := s.Stmt.(driver.StmtQueryContext); ok {
		return sq.QueryContext(ctx, args)
	}
	vals := make([]driver.Value, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	return s.Stmt.Query(vals) //nolint:staticcheck // legacy fallback
}

func (s *countStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return s.c.CheckNamedValue(nv)
}

func (s *countStmt) ColumnConverter(idx int) driver.ValueConverter { //nolint:staticcheck // legacy
	if cc, ok := s.Stmt.(driver.ColumnConverter); ok { //nolint:staticcheck // legacy
		return cc.ColumnConverter(idx)
	}
	return driver.DefaultParameterConverter
}

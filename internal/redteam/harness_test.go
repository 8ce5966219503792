package redteam

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/go-sql-driver/mysql"
)

// Tokens: rows are seeded with seedToken; a stale writer carries staleToken, a newer one
// freshToken.
const (
	seedToken  = 50
	staleToken = 10
	freshToken = 100
)

// expect is what the fenced driver must do with an entry.
type expect int

const (
	// Refused: ErrUnsupported with a stale and with a fresh token, nothing changed.
	Refused expect = iota
	// Fenced: ErrFenced with a stale token, nothing changed; with a fresh token it does
	// what the raw driver did (fencing columns aside) and stamps the rows it changed.
	Fenced
	// Exact (DELETE exactness): with a stale token ErrUnsupported or ErrFenced, nothing
	// changed; if it is not refused, with a fresh token it leaves exactly the rows the
	// raw driver left.
	Exact
	// NoToken: without a token ErrNoToken, nothing changed.
	NoToken
	// Claim: a locking read of a guarded table (no change on the raw driver); with a
	// stale token ErrFenced and nothing changed, with a fresh one it stamps the rows.
	Claim
	// Harmless: results, resulting database and the text reaching the driver are
	// those of the raw driver.
	Harmless
)

func (e expect) String() string {
	return [...]string{"Refused", "Fenced", "Exact", "NoToken", "Claim", "Harmless"}[e]
}

// step is one statement of an entry; the steps run in order on one connection.
type step struct {
	sql   string
	args  []any
	query bool // QueryContext (rows are read); otherwise ExecContext
}

// entry is one line of the catalogue.
type entry struct {
	class string // "1 not a write", "2 dynamic SQL", …
	name  string
	setup []string // plain SQL on the raw driver before the statements (after the seed)
	steps []step
	then  []string // plain SQL on the raw driver after the statements (fires a trigger, calls a function, …)
	want  expect
	tx    bool   // Harmless: run the steps inside BeginTx
	noTok bool   // Harmless: run without a token
	dsn   string // extra DSN parameter ("default_query_exec_mode=simple_protocol")
}

// s builds a step; statements that return rows (SELECT, VALUES, SHOW, EXPLAIN, WITH …
// SELECT, RETURNING) are run with QueryContext.
func s(sql string, args ...any) step {
	return step{sql: sql, args: args, query: returnsRows(sql)}
}

// x builds a step run with ExecContext whatever it is.
func x(sql string, args ...any) step { return step{sql: sql, args: args} }

// q builds a step run with QueryContext whatever it is.
func q(sql string, args ...any) step { return step{sql: sql, args: args, query: true} }

func returnsRows(sql string) bool {
	u := strings.ToUpper(stripLeading(sql))
	for _, h := range []string{"SELECT", "VALUES", "SHOW", "EXPLAIN", "TABLE", "PRAGMA", "DESC"} {
		if strings.HasPrefix(u, h) {
			return true
		}
	}
	if strings.HasPrefix(u, "WITH") && !strings.Contains(u, "RETURNING") {
		// WITH … SELECT reads; WITH … UPDATE/INSERT without RETURNING does not
		i := strings.LastIndex(u, ")")
		return i >= 0 && strings.Contains(u[i:], "SELECT")
	}
	return strings.Contains(u, "RETURNING")
}

// stripLeading drops leading blanks and comments.
func stripLeading(sql string) string {
	for {
		sql = strings.TrimLeft(sql, " \t\r\n(")
		switch {
		case strings.HasPrefix(sql, "--"):
			i := strings.IndexByte(sql, '\n')
			if i < 0 {
				return ""
			}
			sql = sql[i+1:]
		case strings.HasPrefix(sql, "/*") && !strings.HasPrefix(sql, "/*!"):
			i := strings.Index(sql, "*/")
			if i < 0 {
				return ""
			}
			sql = sql[i+2:]
		default:
			return sql
		}
	}
}

// backend is one database for the catalogue.
type backend struct {
	name      string
	dialect   fencedsql.Dialect
	freshDSN  func(testing.TB) string
	connector func(dsn string) (driver.Connector, error) // the raw driver's connector
	withParam func(dsn, kv string) string
	schema    []string // accounts, ledger and their rows
	catalog   []string // queries of one text column describing the schema
	tables    string   // query of the base tables' names
	quote     func(string) string
	only      string // "ONLY " on PostgreSQL: rows of a parent table without its children
}

// ---------------------------------------------------------------- recording driver

// recorder logs what reaches the raw driver while on.
type recorder struct {
	mu  sync.Mutex
	on  bool
	log []string
}

func (r *recorder) add(kind, sql string, args []driver.NamedValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return
	}
	line := kind
	if sql != "" {
		line += " " + sql
	}
	if len(args) > 0 {
		vals := make([]string, len(args))
		for i, a := range args {
			vals[i] = fmt.Sprintf("%d:%s=%#v", a.Ordinal, a.Name, a.Value)
		}
		line += " [" + strings.Join(vals, " ") + "]"
	}
	r.log = append(r.log, line)
}

func (r *recorder) start() {
	r.mu.Lock()
	r.on, r.log = true, nil
	r.mu.Unlock()
}

func (r *recorder) stop() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return slices.Clone(r.log)
}

type recConnector struct {
	raw driver.Connector
	rec *recorder
}

func (c recConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.raw.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recConn{raw: conn, rec: c.rec}, nil
}

func (c recConnector) Driver() driver.Driver { return c.raw.Driver() }

// recConn forwards every interface the three drivers' connections implement.
type recConn struct {
	raw driver.Conn
	rec *recorder
}

var (
	_ driver.ConnBeginTx        = (*recConn)(nil)
	_ driver.ConnPrepareContext = (*recConn)(nil)
	_ driver.ExecerContext      = (*recConn)(nil)
	_ driver.QueryerContext     = (*recConn)(nil)
	_ driver.Pinger             = (*recConn)(nil)
	_ driver.SessionResetter    = (*recConn)(nil)
	_ driver.Validator          = (*recConn)(nil)
	_ driver.NamedValueChecker  = (*recConn)(nil)
)

func (c *recConn) Unwrap() driver.Conn { return c.raw }

func (c *recConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *recConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.rec.add("prepare", query, nil)
	if p, ok := c.raw.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.raw.Prepare(query)
}

func (c *recConn) Close() error { return c.raw.Close() }

func (c *recConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *recConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.rec.add("begin", "", nil)
	var tx driver.Tx
	var err error
	if b, ok := c.raw.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else {
		tx, err = c.raw.Begin() //nolint:staticcheck // fallback
	}
	if err != nil {
		return nil, err
	}
	return recTx{raw: tx, rec: c.rec}, nil
}

func (c *recConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.rec.add("exec", query, args)
	if e, ok := c.raw.(driver.ExecerContext); ok {
		return e.ExecContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (c *recConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.rec.add("query", query, args)
	if q, ok := c.raw.(driver.QueryerContext); ok {
		return q.QueryContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (c *recConn) Ping(ctx context.Context) error {
	if p, ok := c.raw.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *recConn) ResetSession(ctx context.Context) error {
	if r, ok := c.raw.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *recConn) IsValid() bool {
	if v, ok := c.raw.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *recConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.raw.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type recTx struct {
	raw driver.Tx
	rec *recorder
}

func (t recTx) Commit() error {
	t.rec.add("commit", "", nil)
	return t.raw.Commit()
}

func (t recTx) Rollback() error {
	t.rec.add("rollback", "", nil)
	return t.raw.Rollback()
}

// ---------------------------------------------------------------- databases

// dbs is one fresh database: a raw pool (setup, snapshots) and how to open pools on it.
type dbs struct {
	t   *testing.T
	b   backend
	dsn string
	raw *sql.DB
	ctx context.Context
}

func freshDB(t *testing.T, b backend, e entry) *dbs {
	t.Helper()
	dsn := b.freshDSN(t)
	if e.dsn != "" {
		dsn = b.withParam(dsn, e.dsn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	d := &dbs{t: t, b: b, dsn: dsn, ctx: ctx}
	d.raw, _ = d.open(false, nil)
	for _, stmt := range b.schema {
		d.must(stmt)
	}
	for _, stmt := range e.setup {
		d.must(stmt)
	}
	return d
}

// open returns a pool on the database, fenced or raw, recording through rec when set.
func (d *dbs) open(fenced bool, rec *recorder) (*sql.DB, *recorder) {
	d.t.Helper()
	c, err := d.b.connector(d.dsn)
	if err != nil {
		d.t.Fatalf("%s connector: %v", d.b.name, err)
	}
	if rec == nil {
		rec = &recorder{}
	}
	rc := recConnector{raw: c, rec: rec}
	var db *sql.DB
	if fenced {
		db = fencedsql.OpenDB(rc, fencedsql.WithDialect(d.b.dialect), fencedsql.Guard("accounts"))
	} else {
		db = sql.OpenDB(rc)
	}
	d.t.Cleanup(func() { db.Close() })
	return db, rec
}

func (d *dbs) must(stmt string) {
	d.t.Helper()
	if _, err := d.raw.ExecContext(d.ctx, stmt); err != nil {
		d.t.Fatalf("setup on the raw driver: %s\n  %v", stmt, err)
	}
}

// ---------------------------------------------------------------- running

// result is what a run returned: one line per step.
type result struct {
	lines []string
	err   error // the first error; the steps after it did not run
	at    int   // index of the failing step
}

// run executes the steps in order on one connection (or in one BeginTx transaction)
// and stops at the first error.
func run(ctx context.Context, db *sql.DB, e entry) result {
	var r result
	type execQuerier interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	}
	var on execQuerier
	var tx *sql.Tx
	if e.tx || e.want == Claim { // a claim belongs in a transaction
		var err error
		if tx, err = db.BeginTx(ctx, nil); err != nil {
			return result{err: fmt.Errorf("BeginTx: %w", err)}
		}
		on = tx
	} else {
		conn, err := db.Conn(ctx)
		if err != nil {
			return result{err: fmt.Errorf("Conn: %w", err)}
		}
		defer conn.Close()
		on = conn
	}
	for i, st := range e.steps {
		line, err := runStep(ctx, on, st)
		if err != nil {
			r.err, r.at = err, i
			if tx != nil {
				_ = tx.Rollback()
			}
			return r
		}
		r.lines = append(r.lines, line)
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			r.err, r.at = fmt.Errorf("Commit: %w", err), len(e.steps)
		}
	}
	return r
}

func runStep(ctx context.Context, on interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, st step) (string, error) {
	if !st.query {
		res, err := on.ExecContext(ctx, st.sql, st.args...)
		if err != nil {
			return "", err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return "affected: " + err.Error(), nil
		}
		return fmt.Sprintf("affected %d", n), nil
	}
	rows, err := on.QueryContext(ctx, st.sql, st.args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	out, err := readRows(rows)
	if err != nil {
		return "", err
	}
	return strings.Join(out, "\n"), nil
}

// readRows renders every row as "col=value|…" (columns included, so a changed column
// list shows).
func readRows(rows *sql.Rows) ([]string, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			parts[i] = cols[i] + "=" + render(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out, rows.Err()
}

func render(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(v)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(v)
	}
}

// runThen runs the entry's follow-up statements on the raw driver.
func (d *dbs) runThen(e entry, mustWork bool) {
	d.t.Helper()
	for _, stmt := range e.then {
		if _, err := d.raw.ExecContext(d.ctx, stmt); err != nil && mustWork {
			d.t.Fatalf("follow-up on the raw driver: %s\n  %v", stmt, err)
		}
	}
}

// ---------------------------------------------------------------- snapshots

// snapshot is every row of every base table (sorted) and the catalog lines (sorted).
type snapshot struct {
	tables  map[string][]string
	catalog []string
}

// snap reads the database on a new pool, so that no cached plan outlives a schema
// change (PostgreSQL: "cached plan must not change result type"). A read whose fresh
// connection the server drops mid-query (MariaDB under load once answered the catalog
// query with EOF, "invalid connection") is read again on another new pool: the snapshot
// only observes, and reading twice changes nothing.
func (d *dbs) snap() snapshot {
	d.t.Helper()
	for attempt := 1; ; attempt++ {
		sn, what, err := d.snapOnce()
		if err == nil {
			return sn
		}
		if attempt < 3 && (errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysqlInvalidConn)) {
			d.t.Logf("snapshot: %s: %v; reading again on a new pool", what, err)
			continue
		}
		d.t.Fatalf("snapshot: %s: %v", what, err)
	}
}

func (d *dbs) snapOnce() (sn snapshot, what string, err error) {
	c, err := d.b.connector(d.dsn)
	if err != nil {
		return sn, "connector", err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	sn = snapshot{tables: map[string][]string{}}
	var names []string
	rows, err := db.QueryContext(d.ctx, d.b.tables)
	if err != nil {
		return sn, "tables", err
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return sn, "tables", err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sn, "tables", err
	}
	for _, n := range names {
		r, err := db.QueryContext(d.ctx, "SELECT * FROM "+d.b.only+d.b.quote(n))
		if err != nil {
			return sn, "rows of " + n, err
		}
		lines, err := readRows(r)
		r.Close()
		if err != nil {
			return sn, "rows of " + n, err
		}
		slices.Sort(lines)
		sn.tables[n] = lines
	}
	for _, cq := range d.b.catalog {
		r, err := db.QueryContext(d.ctx, cq)
		if err != nil {
			return sn, "catalog: " + cq, err
		}
		for r.Next() {
			var line sql.NullString
			if err := r.Scan(&line); err != nil {
				r.Close()
				return sn, "catalog: " + cq, err
			}
			sn.catalog = append(sn.catalog, line.String)
		}
		r.Close()
		if err := r.Err(); err != nil {
			return sn, "catalog: " + cq, err
		}
	}
	slices.Sort(sn.catalog)
	return sn, "", nil
}

func (sn snapshot) String() string {
	var b strings.Builder
	names := make([]string, 0, len(sn.tables))
	for n := range sn.tables {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "table %s:\n", n)
		for _, r := range sn.tables[n] {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	b.WriteString("catalog:\n")
	for _, c := range sn.catalog {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	return b.String()
}

// masked replaces the fencing columns' values of accounts (and its children) by "*".
func (sn snapshot) masked() snapshot {
	out := snapshot{tables: map[string][]string{}, catalog: sn.catalog}
	for n, rows := range sn.tables {
		m := make([]string, len(rows))
		for i, r := range rows {
			parts := strings.Split(r, "|")
			for j, p := range parts {
				if strings.HasPrefix(p, "fence_token=") || strings.HasPrefix(p, "version=") {
					parts[j] = p[:strings.IndexByte(p, '=')+1] + "*"
				}
			}
			m[i] = strings.Join(parts, "|")
		}
		slices.Sort(m)
		out.tables[n] = m
	}
	return out
}

// diff describes how b differs from a, or "" when they are equal.
func diff(a, b snapshot) string { return diffOf(a, b, func(string) bool { return true }, true) }

// guardedDiff is diff restricted to the rows of accounts (and its inheritance children).
func guardedDiff(a, b snapshot) string { return diffOf(a, b, isGuarded, false) }

func isGuarded(table string) bool {
	return table == "accounts" || strings.HasPrefix(table, "accounts_child")
}

func diffOf(a, b snapshot, tables func(string) bool, catalog bool) string {
	var out []string
	names := map[string]bool{}
	for n := range a.tables {
		names[n] = true
	}
	for n := range b.tables {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		if !tables(n) {
			continue
		}
		ra, oka := a.tables[n]
		rb, okb := b.tables[n]
		switch {
		case !oka:
			out = append(out, "table "+n+" appeared")
		case !okb:
			out = append(out, "table "+n+" disappeared")
		}
		for _, r := range ra {
			if !slices.Contains(rb, r) && okb {
				out = append(out, n+": - "+r)
			}
		}
		for _, r := range rb {
			if !slices.Contains(ra, r) && oka {
				out = append(out, n+": + "+r)
			}
		}
	}
	for _, c := range a.catalog {
		if !catalog {
			break
		}
		if !slices.Contains(b.catalog, c) {
			out = append(out, "catalog: - "+c)
		}
	}
	for _, c := range b.catalog {
		if !catalog {
			break
		}
		if !slices.Contains(a.catalog, c) {
			out = append(out, "catalog: + "+c)
		}
	}
	return strings.Join(out, "\n")
}

// unstamped lists the rows of guarded tables in after that are not in before (new or
// changed) and do not carry token.
func unstamped(before, after snapshot, token int) []string {
	var bad []string
	for n, rows := range after.tables {
		if !isGuarded(n) {
			continue
		}
		for _, r := range rows {
			if slices.Contains(before.tables[n], r) {
				continue
			}
			if !strings.Contains("|"+r+"|", fmt.Sprintf("|fence_token=%d|", token)) {
				bad = append(bad, n+": "+r)
			}
		}
	}
	return bad
}

// ---------------------------------------------------------------- the catalogue

func runCatalogue(t *testing.T, b backend, entries []entry) {
	seen := map[string]bool{}
	for _, e := range entries {
		name := e.class + "/" + e.name
		if seen[name] {
			t.Fatalf("duplicate entry %q", name)
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if e.want == Harmless {
				harmless(t, b, e)
			} else {
				hostile(t, b, e)
			}
		})
	}
}

func tokenCtx(ctx context.Context, tok uint64) context.Context {
	return fencedsql.WithToken(ctx, tok)
}

func describe(e entry) string {
	var parts []string
	for _, st := range e.steps {
		p := st.sql
		if len(st.args) > 0 {
			p += fmt.Sprintf("  %v", st.args)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "\n    ")
}

// hostile: proven to change data raw, then refused or fenced with nothing changed.
func hostile(t *testing.T, b backend, e entry) {
	// 1. The raw driver: legal, and it changes data.
	rawDB := freshDB(t, b, e)
	before := rawDB.snap()
	plain, _ := rawDB.open(false, nil)
	r := run(rawDB.ctx, plain, e)
	if r.err != nil {
		t.Fatalf("ENTRY WRONG: step %d fails on the raw %s driver: %v\n    %s", r.at+1, b.name, r.err, describe(e))
	}
	rawLines := r.lines
	rawAfter := rawDB.snap()
	switch {
	case e.want == Claim:
	case len(e.then) > 0:
		// the follow-up must show the statement's effect on the guarded rows
		rawDB.runThen(e, true)
		rawAfter = rawDB.snap()
		if guardedDiff(before, rawAfter) == "" {
			t.Fatalf("ENTRY WRONG: with its follow-up it changes no row of accounts on the raw %s driver\n    %s\n  then: %s", b.name, describe(e), strings.Join(e.then, "; "))
		}
	case diff(before, rawAfter) == "":
		t.Fatalf("ENTRY WRONG: it changes nothing on the raw %s driver\n    %s", b.name, describe(e))
	}

	// 2. The fenced driver on a fresh database with the same rows.
	d := freshDB(t, b, e)
	base := d.snap()
	if df := diff(before, base); df != "" {
		t.Fatalf("two fresh databases differ (setup not deterministic):\n%s", df)
	}
	if len(e.then) > 0 && e.want != Refused && e.want != NoToken {
		t.Fatalf("harness: follow-up statements only go with Refused and NoToken entries")
	}
	check := func(what string, ctx context.Context, want ...error) error {
		t.Helper()
		base := d.snap() // a Refused entry's follow-up may have run before
		w, rec := d.open(true, nil)
		rec.start()
		r := run(ctx, w, e)
		sent := rec.stop()
		after := d.snap()
		if len(e.then) > 0 {
			// nothing of the statement may be left for the follow-up to fire
			d.runThen(e, false)
			if df := guardedDiff(base, d.snap()); df != "" {
				t.Errorf("BYPASS: %s on %s: after the follow-up (%s) accounts changed:\n%s\n    %s",
					what, b.name, strings.Join(e.then, "; "), indent(df), describe(e))
			}
		}
		ok := false
		for _, target := range want {
			ok = ok || errors.Is(r.err, target)
		}
		if !ok {
			t.Errorf("BYPASS? %s on %s: got err=%v (step %d), want %v\n    %s\n  sent to the driver:\n    %s\n  change:\n%s",
				what, b.name, r.err, r.at+1, want, describe(e), strings.Join(sent, "\n    "), indent(diff(base, after)))
		} else if df := diff(base, after); df != "" {
			t.Errorf("BYPASS: %s on %s failed with %v but changed data:\n%s\n    %s\n  sent to the driver:\n    %s",
				what, b.name, r.err, indent(df), describe(e), strings.Join(sent, "\n    "))
		}
		if t.Failed() {
			t.FailNow()
		}
		return r.err
	}
	stale := tokenCtx(d.ctx, staleToken)
	fresh := tokenCtx(d.ctx, freshToken)
	switch e.want {
	case Refused:
		check("stale token", stale, fencedsql.ErrUnsupported)
		check("fresh token", fresh, fencedsql.ErrUnsupported)
	case NoToken:
		check("no token", d.ctx, fencedsql.ErrNoToken)
	case Fenced, Claim:
		check("stale token", stale, fencedsql.ErrFenced)
		freshRun(t, d, e, base, rawAfter, rawLines, fresh, false)
	case Exact:
		if err := check("stale token", stale, fencedsql.ErrUnsupported, fencedsql.ErrFenced); errors.Is(err, fencedsql.ErrUnsupported) {
			check("fresh token", fresh, fencedsql.ErrUnsupported)
			return
		}
		freshRun(t, d, e, base, rawAfter, rawLines, fresh, true)
	}
}

// freshRun runs a fenced entry with a newer token: it must succeed and do what the raw
// driver did; every row it changed carries the token.
func freshRun(t *testing.T, d *dbs, e entry, base, rawAfter snapshot, rawLines []string, ctx context.Context, exact bool) {
	t.Helper()
	w, rec := d.open(true, nil)
	rec.start()
	r := run(ctx, w, e)
	sent := rec.stop()
	if r.err != nil && (exact || e.want == Claim) && errors.Is(r.err, fencedsql.ErrUnsupported) {
		// Refused at run time (the second selection differed from the fencing
		// UPDATE's): acceptable when nothing of it was kept.
		if df := diff(base, d.snap()); df != "" {
			t.Fatalf("fresh token %d on %s: refused at run time (%v) but changed data:\n%s\n    %s\n  sent:\n    %s",
				freshToken, d.b.name, r.err, indent(df), describe(e), strings.Join(sent, "\n    "))
		}
		return
	}
	if r.err != nil {
		t.Fatalf("fresh token %d on %s: step %d failed: %v\n    %s\n  sent:\n    %s", freshToken, d.b.name, r.at+1, r.err, describe(e), strings.Join(sent, "\n    "))
	}
	if a, b := maskLines(rawLines), maskLines(r.lines); !slices.Equal(a, b) {
		t.Errorf("NOT THE SAME RESULT: with a fresh token on %s the statements returned other rows or counts than on the raw driver (fencing columns masked):\n  raw:\n    %s\n  fenced:\n    %s\n    %s\n  sent:\n    %s",
			d.b.name, strings.Join(a, "\n    "), strings.Join(b, "\n    "), describe(e), strings.Join(sent, "\n    "))
	}
	d.runThen(e, true)
	after := d.snap()
	if exact {
		if df := diff(rawAfter, after); df != "" {
			t.Fatalf("NOT EXACT: with a fresh token on %s the result differs from the raw driver's (raw → fenced):\n%s\n    %s\n  sent:\n    %s",
				d.b.name, indent(df), describe(e), strings.Join(sent, "\n    "))
		}
		return
	}
	if df := diff(rawAfter.masked(), after.masked()); df != "" {
		t.Fatalf("with a fresh token on %s the result differs from the raw driver's beyond the fencing columns (raw → fenced):\n%s\n    %s\n  sent:\n    %s",
			d.b.name, indent(df), describe(e), strings.Join(sent, "\n    "))
	}
	if bad := unstamped(base, after, freshToken); len(bad) > 0 {
		t.Fatalf("with a fresh token on %s rows changed without the token:\n  %s\n    %s", d.b.name, strings.Join(bad, "\n  "), describe(e))
	}
	if e.want == Claim && diff(base, after) == "" {
		t.Fatalf("with a fresh token on %s the locking read claimed no row\n    %s\n  sent:\n    %s", d.b.name, describe(e), strings.Join(sent, "\n    "))
	}
}

// harmless: the same results, database and driver traffic as the raw driver.
func harmless(t *testing.T, b backend, e entry) {
	type outcome struct {
		r    result
		sent []string
		snap snapshot
	}
	do := func(fenced bool) outcome {
		d := freshDB(t, b, e)
		db, rec := d.open(fenced, nil)
		ctx := d.ctx
		if !e.noTok {
			ctx = tokenCtx(ctx, staleToken)
		}
		// The pool's first connection (and, fenced, its first-use catalog queries) before
		// the recording: only the entry's statements are compared.
		db.SetMaxIdleConns(1)
		db.SetMaxOpenConns(1)
		if err := db.PingContext(d.ctx); err != nil {
			t.Fatalf("ping: %v", err)
		}
		rec.start()
		r := run(ctx, db, e)
		sent := rec.stop()
		d.runThen(e, false)
		return outcome{r: r, sent: sent, snap: d.snap()}
	}
	raw := do(false)
	if raw.r.err != nil {
		t.Fatalf("ENTRY WRONG: step %d fails on the raw %s driver: %v\n    %s", raw.r.at+1, b.name, raw.r.err, describe(e))
	}
	wr := do(true)
	if wr.r.err != nil {
		t.Fatalf("harmless statement refused or failed on the fenced %s driver (step %d): %v\n    %s\n  sent:\n    %s",
			b.name, wr.r.at+1, wr.r.err, describe(e), strings.Join(wr.sent, "\n    "))
	}
	if !slices.Equal(raw.sent, wr.sent) {
		t.Errorf("CHANGED IN MEANING? the driver received other text through the fenced %s driver:\n  raw:\n    %s\n  fenced:\n    %s",
			b.name, strings.Join(raw.sent, "\n    "), strings.Join(wr.sent, "\n    "))
	}
	if !slices.Equal(raw.r.lines, wr.r.lines) {
		t.Errorf("other results through the fenced %s driver:\n  raw:\n    %s\n  fenced:\n    %s",
			b.name, strings.Join(raw.r.lines, "\n    "), strings.Join(wr.r.lines, "\n    "))
	}
	if df := diff(raw.snap, wr.snap); df != "" {
		t.Errorf("the database differs after the fenced %s driver ran it (raw → fenced):\n%s", b.name, indent(df))
	}
	if len(raw.sent) == 0 {
		t.Errorf("recorder saw nothing (harness broken)")
	}
}

// maskLines hides the fencing columns' values in result lines.
func maskLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		rows := strings.Split(l, "\n")
		for j, r := range rows {
			parts := strings.Split(r, "|")
			for k, p := range parts {
				if strings.HasPrefix(p, "fence_token=") || strings.HasPrefix(p, "version=") {
					parts[k] = p[:strings.IndexByte(p, '=')+1] + "*"
				}
			}
			rows[j] = strings.Join(parts, "|")
		}
		out[i] = strings.Join(rows, "\n")
	}
	return out
}

func indent(s string) string {
	if s == "" {
		return "    (none)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// mysqlInvalidConn is go-sql-driver/mysql's error for a connection the server closed
// while a query was under way.
var mysqlInvalidConn = mysql.ErrInvalidConn

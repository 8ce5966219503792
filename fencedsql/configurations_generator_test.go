// Seeded generators over the configuration space of a deployment (red-team rt55c), one
// oracle (docs/design.md G13, "nothing fails open"): every write to a table the
// database records as guarded (registry row, guard triggers) or that the pool lists is
// fenced — a stale token is refused, a write without a token is refused — or the
// open / first write is refused with a typed error; with a consistent configuration
// and the current token the write is not refused. The default run is CI-sized (seed 1;
// SQLite 100 trials, PostgreSQL 6, MariaDB 30, each a few seconds); the long form is
// FENCEDSQL_SCHEDULES_SEED=<n> FENCEDSQL_SCHEDULES_ITERS=<n> (e.g. 300 SQLite trials,
// 30 server trials per seed), FENCEDSQL_SCHEDULES_LOG=1 to show each refusal.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/XSAM/otelsql"
	mysqld "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
	msqlite "modernc.org/sqlite"
)

func cfggenTyped(err error) bool {
	var ce *fencedsql.ConfigError
	for _, e := range []error{fencedsql.ErrFenced, fencedsql.ErrSchema, fencedsql.ErrUnsupported,
		fencedsql.ErrNoToken, fencedsql.ErrGuard, fencedsql.ErrVersionConflict} {
		if errors.Is(err, e) {
			return true
		}
	}
	return errors.As(err, &ce)
}

// cfggenCfg is one deployment.
type cfggenCfg struct {
	// database side
	regTok, regVer string // the columns the registry / guard record ("" = not recorded)
	register       bool   // schema.RegisterTables
	trigger        bool   // the guard's triggers (Fix of schema.Check)
	// pool side
	form      string // sqlopen, opendb, register, wrap, otelunder, otelover, sqlx
	listing   string // "" = none
	lisTok    string
	lisVer    string
	checkOff  bool
	recheck   string // "", "0", "-1"
	ddl, dyn  bool
	dsnTables bool // list through the DSN's fenced_tables (else Guard option)
	stmtName  string
	regName   string // the name the registry / guard records
	op        string // update, delete, upsert
	mode      string // exec, tx, prepare, conn
}

func (c cfggenCfg) String() string {
	return fmt.Sprintf("db{reg=%v trig=%v cols=%s/%s} pool{form=%s list=%q cols=%s/%s viaDSN=%v checkOff=%v recheck=%q ddl=%v dyn=%v} stmt-name=%s reg-name=%s op=%s mode=%s",
		c.register, c.trigger, c.regTok, c.regVer, c.form, c.listing, c.lisTok, c.lisVer, c.dsnTables, c.checkOff, c.recheck, c.ddl, c.dyn, c.stmtName, c.regName, c.op, c.mode)
}

var cfggenSeq atomic.Int64

func cfggenPick[T any](r *rand.Rand, xs ...T) T { return xs[r.Intn(len(xs))] }

func cfggenGen(r *rand.Rand) cfggenCfg {
	var c cfggenCfg
	c.register = r.Intn(2) == 0
	c.trigger = r.Intn(2) == 0
	c.regTok = cfggenPick(r, "fence_token", "tok")
	c.regVer = cfggenPick(r, "version", "ver")
	c.form = cfggenPick(r, "sqlopen", "opendb", "register", "wrap", "otelunder", "otelover", "sqlx")
	c.listing = cfggenPick(r, "", "accounts", "ACCOUNTS", `"accounts"`, "main.accounts", "Main.Accounts", `"main"."accounts"`, "main.ACCOUNTS")
	c.lisTok = cfggenPick(r, "fence_token", "tok", "TOK", "Fence_Token")
	c.lisVer = cfggenPick(r, "version", "ver", "VER")
	c.checkOff = r.Intn(3) == 0
	c.recheck = cfggenPick(r, "", "0", "-1")
	c.ddl = r.Intn(3) == 0
	c.dyn = r.Intn(3) == 0
	c.dsnTables = r.Intn(2) == 0
	c.regName = cfggenPick(r, "accounts", "main.accounts", "ACCOUNTS", "Main.Accounts")
	c.op = cfggenPick(r, "update", "delete", "upsert")
	c.mode = cfggenPick(r, "exec", "tx", "prepare", "conn")
	c.stmtName = cfggenPick(r, "accounts", "ACCOUNTS", `"accounts"`, "main.accounts", `"main"."accounts"`, "MAIN.Accounts", `[accounts]`, "`accounts`")
	return c
}

// cfggenDB makes the database: accounts with two full sets of fencing columns, row 1.
func cfggenDB(t *testing.T, c cfggenCfg) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("cfggen_%d.db", cfggenSeq.Add(1)))
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	testdb.Exec(t, raw, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
		tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 0), (2, 0)`)
	rn := c.regName
	if rn == "" {
		rn = "accounts"
	}
	spec := schema.GuardSpec{Table: rn, TokenColumn: c.regTok, VersionColumn: c.regVer}
	if c.register {
		if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, spec); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	if c.trigger {
		reps, err := schema.Check(schema.WithoutTombstones(ctx), raw, sqlite.Dialect, spec)
		if err != nil {
			t.Fatalf("check: %v", err)
		}
		for _, rep := range reps {
			for _, s := range rep.Fix {
				if _, err := raw.ExecContext(ctx, s); err != nil {
					t.Fatalf("fix %q: %v", s, err)
				}
			}
		}
	}
	// The newer holder (token 10) wrote row 1 on the recorded columns.
	tokc, verc := c.truth()
	if tokc != "" {
		testdb.Exec(t, raw, fmt.Sprintf(`UPDATE accounts SET balance = 100, %s = 10, %s = %s + 1 WHERE id = 1`, tokc, verc, verc))
	}
	return path
}

// truth: the fencing columns the database records (registry wins), or the listed ones.
func (c cfggenCfg) truth() (string, string) {
	if c.register || c.trigger {
		return c.regTok, c.regVer
	}
	if c.listing != "" {
		return strings.ToLower(c.lisTok), strings.ToLower(c.lisVer)
	}
	return "", ""
}

var cfggenRegistered atomic.Int64

// consistent: the pool lists the table (if at all) with the recorded columns.
func (c cfggenCfg) consistent() bool {
	if strings.Contains(c.listing, `"`) {
		return false // a quoted name in a listing is a ConfigError (loud)
	}
	if !c.register && !c.trigger {
		return c.listing != ""
	}
	if c.listing == "" {
		return true // guarded on the recorded columns (registry row, or the guard trigger's)
	}
	return strings.EqualFold(c.lisTok, c.regTok) && strings.EqualFold(c.lisVer, c.regVer)
}

func cfggenPool(t *testing.T, c cfggenCfg, path string) (*sql.DB, error) {
	t.Helper()
	var opts []fencedsql.Option
	q := []string{}
	if c.listing != "" {
		if c.dsnTables {
			q = append(q, fencedsql.ParamTables+"="+urlEsc(c.listing))
			if !strings.EqualFold(c.lisTok, "fence_token") {
				q = append(q, fencedsql.ParamTokenColumn+"="+c.lisTok)
			}
			if !strings.EqualFold(c.lisVer, "version") {
				q = append(q, fencedsql.ParamVersionColumn+"="+c.lisVer)
			}
		} else {
			opts = append(opts, fencedsql.Guard(c.listing, fencedsql.TokenColumn(c.lisTok), fencedsql.VersionColumn(c.lisVer)))
		}
	}
	if c.checkOff {
		opts = append(opts, fencedsql.WithSchemaCheck(false))
	}
	switch c.recheck {
	case "0":
		opts = append(opts, fencedsql.WithSchemaRecheck(0))
	case "-1":
		opts = append(opts, fencedsql.WithSchemaRecheck(fencedsql.NeverRecheck))
	}
	if c.ddl {
		opts = append(opts, fencedsql.WithDDL(true))
	}
	if c.dyn {
		opts = append(opts, fencedsql.WithDynamicSQL(true))
	}
	dsn := "file:" + path
	if len(q) > 0 {
		dsn += "?" + strings.Join(q, "&")
	}
	var db *sql.DB
	var err error
	switch c.form {
	case "sqlopen", "sqlx", "otelover":
		// fenced-sqlite only takes options through the DSN: move the code options there
		// by registering a name of our own when there are any.
		name := "fenced-sqlite"
		if len(opts) > 0 {
			name = fmt.Sprintf("cfggen-reg-%d", cfggenRegistered.Add(1))
			fencedsql.Register(name, &msqlite.Driver{}, append([]fencedsql.Option{fencedsql.WithDialect(sqlite.Dialect)}, opts...)...)
		}
		switch c.form {
		case "sqlopen":
			db, err = sql.Open(name, dsn)
		case "sqlx":
			var x *sqlx.DB
			x, err = sqlx.Open(name, dsn)
			if x != nil {
				db = x.DB
			}
		case "otelover":
			db, err = otelsql.Open(name, dsn)
		}
	case "register":
		name := fmt.Sprintf("cfggen-reg-%d", cfggenRegistered.Add(1))
		fencedsql.Register(name, &msqlite.Driver{}, append([]fencedsql.Option{fencedsql.WithDialect(sqlite.Dialect)}, opts...)...)
		db, err = sql.Open(name, dsn)
	case "wrap":
		name := fmt.Sprintf("cfggen-wrap-%d", cfggenRegistered.Add(1))
		sql.Register(name, fencedsql.Wrap(&msqlite.Driver{}, append([]fencedsql.Option{fencedsql.WithDialect(sqlite.Dialect)}, opts...)...))
		db, err = sql.Open(name, dsn)
	case "opendb":
		db = fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, dsn), append([]fencedsql.Option{fencedsql.WithDialect(sqlite.Dialect)}, opts...)...)
	case "otelunder":
		db = fencedsql.OpenDB(fencedsql.DSNConnector(otelsql.WrapDriver(&msqlite.Driver{}), dsn), append([]fencedsql.Option{fencedsql.WithDialect(sqlite.Dialect)}, opts...)...)
	}
	if db != nil {
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
	}
	return db, err
}

func urlEsc(s string) string { return strings.NewReplacer(`"`, "%22", " ", "%20").Replace(s) }

func cfggenRow(t *testing.T, path string, id int) string {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var b, ft, v, tk, vr int64
	if err := raw.QueryRow(`SELECT balance, fence_token, version, tok, ver FROM accounts WHERE id = ?`, id).Scan(&b, &ft, &v, &tk, &vr); err != nil {
		return "gone: " + err.Error()
	}
	return fmt.Sprintf("balance=%d fence_token=%d version=%d tok=%d ver=%d", b, ft, v, tk, vr)
}

// TestConfigurationsNeverFailOpen: seeded random deployments (SQLite).
func TestConfigurationsNeverFailOpen(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, 1, 100)
	seed, n := k.Seed, k.Iters
	t.Logf("seed %d, %d trials", seed, n)
	r := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	fails := map[string]int{}
	stats := map[string]int{}
	defer func() { t.Logf("outcomes: %v", stats) }()
	for i := 0; i < n; i++ {
		c := cfggenGen(r)
		tokc, _ := c.truth()
		if tokc == "" {
			continue // nothing recorded or listed: nothing to fence
		}
		path := cfggenDB(t, c)
		db, err := cfggenPool(t, c, path)
		if err != nil {
			if !cfggenTyped(err) {
				t.Errorf("trial %d %s: open: untyped %v", i, c, err)
			}
			continue
		}
		before := cfggenRow(t, path, 1)
		err = cfggenRun(ctx, db, c, 5, 1)
		after := cfggenRow(t, path, 1)
		stats["stale:"+cfggenClass(err)]++
		key := ""
		switch {
		case err == nil && after != before:
			key = "stale accepted " + c.op
		case err == nil && c.op != "upsert":
			key = "stale nil-error no change"
		case err != nil && !cfggenTyped(err):
			key = "stale untyped"
		}
		if key != "" {
			fails[key]++
			if fails[key] <= 6 {
				t.Errorf("trial %d %s\n  stale(5): err=%v\n  before %s\n  after  %s", i, c, err, before, after)
			}
		}
		if c.consistent() {
			b3 := cfggenRow(t, path, 1)
			err := cfggenRun(ctx, db, c, 20, 1)
			stats["current:"+cfggenClass(err)]++
			if err != nil {
				fails["over-refusal "+cfggenClass(err)]++
				if fails["over-refusal "+cfggenClass(err)] <= 6 {
					t.Errorf("trial %d %s\n  current token 20 on a consistent configuration refused: %v\n  row %s", i, c, err, b3)
				}
			}
		}
		before2 := cfggenRow(t, path, 2)
		err = cfggenRun(ctx, db, c, 0, 2)
		after2 := cfggenRow(t, path, 2)
		stats["notoken:"+cfggenClass(err)]++
		key = ""
		switch {
		case err == nil && after2 != before2:
			key = "notoken accepted " + c.op
		case err == nil:
			key = "notoken nil-error"
		case err != nil && !cfggenTyped(err):
			key = "notoken untyped"
		}
		if key != "" {
			fails[key]++
			if fails[key] <= 6 {
				t.Errorf("trial %d %s\n  no token: err=%v\n  before %s\n  after  %s", i, c, err, before2, after2)
			}
		}
		db.Close()
	}
	if len(fails) > 0 {
		t.Errorf("failure classes: %v", fails)
	}
}

// cfggenRun sends c's write of row id under tok (0: no token) in c's mode.
func cfggenRun(ctx context.Context, db *sql.DB, c cfggenCfg, tok uint64, id int) error {
	if tok != 0 {
		ctx = fencedsql.WithToken(ctx, tok)
	}
	var q string
	switch c.op {
	case "update":
		q = fmt.Sprintf(`UPDATE %s SET balance = -1 WHERE id = %d`, c.stmtName, id)
	case "delete":
		q = fmt.Sprintf(`DELETE FROM %s WHERE id = %d`, c.stmtName, id)
	case "upsert":
		q = fmt.Sprintf(`INSERT INTO %s (id, balance) VALUES (%d, -1) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance`, c.stmtName, id)
	case "upsert-my":
		q = fmt.Sprintf(`INSERT INTO %s (id, balance) VALUES (%d, -1) ON DUPLICATE KEY UPDATE balance = VALUES(balance)`, c.stmtName, id)
	}
	switch c.mode {
	case "exec":
		_, err := db.ExecContext(ctx, q)
		return err
	case "tx":
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, q); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	case "prepare":
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.ExecContext(ctx)
		return err
	default:
		cn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer cn.Close()
		_, err = cn.ExecContext(ctx, q)
		return err
	}
}

func cfggenClass(err error) string {
	var ce *fencedsql.ConfigError
	switch {
	case err == nil:
		return "nil"
	case errors.As(err, &ce):
		return "config"
	case errors.Is(err, fencedsql.ErrFenced):
		return "fenced"
	case errors.Is(err, fencedsql.ErrNoToken):
		return "notoken"
	case errors.Is(err, fencedsql.ErrGuard):
		return "guard"
	case errors.Is(err, fencedsql.ErrSchema):
		return "schema"
	case errors.Is(err, fencedsql.ErrUnsupported):
		return "unsupported"
	}
	return "other"
}

// cfggenTriggerOnly makes accounts guarded by the guard's triggers alone (schema.Check's
// Fix, not registered) on the columns tok/version, and the newer holder's write (token
// 10) through a correctly configured pool.
func cfggenTriggerOnly(t *testing.T) string {
	c := cfggenCfg{trigger: true, regTok: "tok", regVer: "version"}
	path := cfggenDB(t, c)
	good := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, "file:"+path),
		fencedsql.WithDialect(sqlite.Dialect),
		fencedsql.Guard("accounts", fencedsql.TokenColumn("tok"), fencedsql.VersionColumn("version")))
	defer good.Close()
	if _, err := good.ExecContext(fencedsql.WithToken(context.Background(), 10), `UPDATE accounts SET balance = 100 WHERE id = 2`); err != nil {
		t.Fatalf("newer holder through the correct pool: %v", err)
	}
	return path
}

// One PostgreSQL deployment: public.accounts and maybe s2.accounts (same shape),
// recorded (registry / triggers) or listed in various spellings, reached through
// various search_paths and statement spellings.
type cfggenPG struct {
	s2        bool     // s2.accounts exists
	reg       []string // registered names
	trig      []string // tables given the guard triggers (qualified)
	path      string   // "", "s2,public", "public,s2"  (DSN options=-c search_path=)
	pathParam bool     // the DSN's search_path parameter instead of options
	listing   string
	checkOff  bool
	recheck   string
	form      string
	stmt      string
	op        string
	mode      string
}

func (c cfggenPG) String() string {
	return fmt.Sprintf("{s2=%v reg=%v trig=%v path=%q pathParam=%v list=%q checkOff=%v recheck=%q form=%s stmt=%s op=%s mode=%s}",
		c.s2, c.reg, c.trig, c.path, c.pathParam, c.listing, c.checkOff, c.recheck, c.form, c.stmt, c.op, c.mode)
}

func cfggenGenPG(r *rand.Rand) cfggenPG {
	var c cfggenPG
	c.s2 = r.Intn(3) != 0
	tables := []string{"public.accounts"}
	if c.s2 {
		tables = append(tables, "s2.accounts")
	}
	for _, tb := range tables {
		switch r.Intn(4) {
		case 0:
			c.reg = append(c.reg, cfggenPick(r, tb, strings.TrimPrefix(tb, "public."), strings.ToUpper(tb)))
		case 1:
			c.trig = append(c.trig, tb)
		case 2:
			c.reg = append(c.reg, tb)
			c.trig = append(c.trig, tb)
		}
	}
	c.path = cfggenPick(r, "", "s2,public", "public,s2", "s2")
	c.pathParam = r.Intn(2) == 0
	c.listing = cfggenPick(r, "", "accounts", "public.accounts", "s2.accounts", "ACCOUNTS", "PUBLIC.Accounts", "accounts,s2.accounts")
	c.checkOff = r.Intn(4) == 0
	c.recheck = cfggenPick(r, "", "0", "-1")
	c.form = cfggenPick(r, "sqlopen", "opendb", "otelunder", "otelover")
	c.stmt = cfggenPick(r, "accounts", "public.accounts", "s2.accounts", `"public"."accounts"`, "PUBLIC.ACCOUNTS", `"s2".accounts`, "ONLY accounts")
	c.op = cfggenPick(r, "update", "delete", "upsert")
	c.mode = cfggenPick(r, "exec", "tx", "prepare", "conn")
	return c
}

// guarded: the qualified tables the deployment records or lists, for the oracle.
func (c cfggenPG) guarded() map[string]bool {
	g := map[string]bool{}
	add := func(name string) {
		n := strings.ToLower(name)
		if strings.Contains(n, ".") {
			g[n] = true
			return
		}
		g["public."+n] = true
		if c.s2 {
			g["s2."+n] = true
		}
	}
	for _, n := range c.reg {
		add(n)
	}
	for _, n := range c.trig {
		add(n)
	}
	for _, n := range strings.Split(c.listing, ",") {
		if n != "" {
			add(n)
		}
	}
	if !c.s2 {
		delete(g, "s2.accounts")
	}
	return g
}

func cfggenPGRows(t *testing.T, raw *sql.DB, c cfggenPG) map[string]string {
	t.Helper()
	out := map[string]string{}
	tabs := []string{"public.accounts"}
	if c.s2 {
		tabs = append(tabs, "s2.accounts")
	}
	for _, tb := range tabs {
		rows, err := raw.Query(`SELECT id, balance, fence_token, version FROM ` + tb + ` ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for rows.Next() {
			var id, bal, ft, v int64
			if err := rows.Scan(&id, &bal, &ft, &v); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "(%d %d %d %d)", id, bal, ft, v)
		}
		rows.Close()
		out[tb] = b.String()
	}
	return out
}

func TestConfigurationsNeverFailOpenPostgres(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, 1, 6)
	seed, n := k.Seed, k.Iters
	t.Logf("seed %d, %d trials", seed, n)
	r := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	stats := map[string]int{}
	defer func() { t.Logf("outcomes: %v", stats) }()
	for i := 0; i < n; i++ {
		c := cfggenGenPG(r)
		g := c.guarded()
		if len(g) == 0 {
			continue
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { cfggenPGTrial(t, ctx, i, c, g, stats) })
	}
}

func cfggenPGTrial(t *testing.T, ctx context.Context, i int, c cfggenPG, g map[string]bool, stats map[string]int) {
	{
		admin := testdb.Postgres(t)
		raw := testdb.Open(t, "pgx", admin)
		tabs := []string{"public.accounts"}
		if c.s2 {
			testdb.Exec(t, raw, `CREATE SCHEMA s2`)
			tabs = append(tabs, "s2.accounts")
		}
		for _, tb := range tabs {
			testdb.Exec(t, raw, `CREATE TABLE `+tb+` (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
				`INSERT INTO `+tb+` (id, balance) VALUES (1, 0), (2, 0)`)
		}
		for _, n := range c.reg {
			if err := schema.RegisterTables(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: n}); err != nil {
				t.Fatalf("register %s: %v", n, err)
			}
		}
		for _, tb := range c.trig {
			reps, err := schema.Check(schema.WithoutTombstones(ctx), raw, postgres.Dialect, schema.GuardSpec{Table: tb})
			if err != nil {
				t.Fatalf("check %s: %v", tb, err)
			}
			for _, rep := range reps {
				for _, q := range rep.Fix {
					if strings.Contains(q, "fencedsql_registry") {
						continue
					}
					testdb.Exec(t, raw, q)
				}
			}
		}
		// The newer holder: token 10 on row 1 of every table (through the protocol).
		for _, tb := range tabs {
			testdb.Exec(t, raw, `UPDATE `+tb+` SET balance = 100, fence_token = 10, version = version + 1 WHERE id = 1`)
		}
		dsn := admin
		if c.path != "" {
			if c.pathParam {
				dsn += "&search_path=" + c.path
			} else {
				dsn += "&options=-c%20search_path%3D" + strings.ReplaceAll(c.path, ",", "%2C")
			}
		}
		var opts []fencedsql.Option
		if c.checkOff {
			opts = append(opts, fencedsql.WithSchemaCheck(false))
		}
		switch c.recheck {
		case "0":
			opts = append(opts, fencedsql.WithSchemaRecheck(0))
		case "-1":
			opts = append(opts, fencedsql.WithSchemaRecheck(-1))
		}
		for _, l := range strings.Split(c.listing, ",") {
			if l != "" {
				opts = append(opts, fencedsql.Guard(l))
			}
		}
		var db *sql.DB
		var err error
		switch c.form {
		case "sqlopen", "otelover":
			name := fmt.Sprintf("cfggen-pg-%d", cfggenRegistered.Add(1))
			fencedsql.Register(name, stdlib.GetDefaultDriver(), append([]fencedsql.Option{fencedsql.WithDialect(postgres.Dialect)}, opts...)...)
			if c.form == "sqlopen" {
				db, err = sql.Open(name, dsn)
			} else {
				db, err = otelsql.Open(name, dsn)
			}
		case "opendb":
			db = fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), append([]fencedsql.Option{fencedsql.WithDialect(postgres.Dialect)}, opts...)...)
		case "otelunder":
			db = fencedsql.OpenDB(fencedsql.DSNConnector(otelsql.WrapDriver(stdlib.GetDefaultDriver()), dsn), append([]fencedsql.Option{fencedsql.WithDialect(postgres.Dialect)}, opts...)...)
		}
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		before := cfggenPGRows(t, raw, c)
		cc := cfggenCfg{stmtName: c.stmt, op: c.op, mode: c.mode}
		err = cfggenRun(ctx, db, cc, 5, 1)
		stats["stale:"+cfggenClass(err)]++
		if os.Getenv("FENCEDSQL_SCHEDULES_LOG") == "1" && err != nil && cfggenClass(err) != "fenced" {
			t.Logf("trial %d %s: stale refused: %.300s", i, c, err)
		}
		after := cfggenPGRows(t, raw, c)
		for tb := range g {
			if before[tb] != after[tb] && err == nil {
				t.Errorf("trial %d %s: stale write (5) changed guarded %s: %s -> %s", i, c, tb, before[tb], after[tb])
			}
		}
		if err != nil && !cfggenTyped(err) {
			t.Errorf("trial %d %s: stale: untyped %v", i, c, err)
		}
		before = after
		err = cfggenRun(ctx, db, cfggenCfg{stmtName: strings.Replace(c.stmt, "", "", 1), op: c.op, mode: c.mode}, 0, 2)
		_ = err
		stats["notoken:"+cfggenClass(err)]++
		after = cfggenPGRows(t, raw, c)
		for tb := range g {
			if before[tb] != after[tb] {
				t.Errorf("trial %d %s: no-token write changed guarded %s: %s -> %s (err %v)", i, c, tb, before[tb], after[tb], err)
			}
		}
		if err != nil && !cfggenTyped(err) {
			t.Errorf("trial %d %s: no token: untyped %v", i, c, err)
		}
		db.Close()
		raw.Close()
	}
}

// MariaDB deployments: DSN parameters × listing spellings × records × modes.
func TestConfigurationsNeverFailOpenMariaDB(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, 1, 30)
	seed, n := k.Seed, k.Iters
	t.Logf("seed %d, %d trials", seed, n)
	r := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	stats := map[string]int{}
	defer func() { t.Logf("outcomes: %v", stats) }()
	for i := 0; i < n; i++ {
		reg := r.Intn(3) // 0 none, 1 registry, 2 registry qualified
		trig := r.Intn(2) == 0
		listing := cfggenPick(r, "", "accounts", "DB.accounts", "`accounts`")
		if reg == 0 && !trig && listing == "" {
			continue
		}
		params := []string{}
		for _, p := range []string{"interpolateParams=true", "multiStatements=true", "clientFoundRows=true"} {
			if r.Intn(2) == 0 {
				params = append(params, p)
			}
		}
		checkOff := r.Intn(4) == 0
		stmt := cfggenPick(r, "accounts", "`accounts`", "DB.accounts", "`DB`.`accounts`")
		op := cfggenPick(r, "update", "delete", "upsert-my")
		mode := cfggenPick(r, "exec", "tx", "prepare", "conn")
		desc := fmt.Sprintf("reg=%d trig=%v list=%q params=%v checkOff=%v stmt=%s op=%s mode=%s", reg, trig, listing, params, checkOff, stmt, op, mode)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			dsn := testdb.MySQL(t)
			cfg, _ := mysqldrv.ParseDSN(dsn)
			dbn := cfg.DBName
			raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
				`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 10, 1), (2, 0, 0, 0)`)
			switch reg {
			case 1:
				if err := schema.RegisterTables(ctx, raw, mysqld.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil {
					t.Fatal(err)
				}
			case 2:
				if err := schema.RegisterTables(ctx, raw, mysqld.Dialect, schema.GuardSpec{Table: dbn + ".accounts"}); err != nil {
					t.Fatal(err)
				}
			}
			if trig {
				reps, err := schema.Check(schema.WithoutTombstones(ctx), raw, mysqld.Dialect, schema.GuardSpec{Table: "accounts"})
				if err != nil {
					t.Fatal(err)
				}
				for _, rp := range reps {
					for _, q := range rp.Fix {
						if !strings.Contains(q, "fencedsql_registry") {
							testdb.Exec(t, raw, q)
						}
					}
				}
			}
			d := dsn
			for _, p := range params {
				d += "&" + p
			}
			if listing != "" {
				d += "&fenced_tables=" + strings.ReplaceAll(listing, "DB", dbn)
			}
			if checkOff {
				d += "&fenced_schema_check=false"
			}
			db, err := sql.Open("fenced-mysql", d)
			if err != nil {
				if !cfggenTyped(err) {
					t.Errorf("%s: open: untyped %v", desc, err)
				}
				stats["open:"+cfggenClass(err)]++
				return
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			row := func(id int) string {
				var x, y, z int64
				_ = raw.QueryRow(`SELECT balance, fence_token, version FROM accounts WHERE id = ?`, id).Scan(&x, &y, &z)
				return fmt.Sprint(x, " ", y, " ", z)
			}
			c := cfggenCfg{stmtName: strings.ReplaceAll(stmt, "DB", dbn), op: op, mode: mode}
			b1 := row(1)
			err = cfggenRun(ctx, db, c, 5, 1)
			stats["stale:"+cfggenClass(err)]++
			if a := row(1); a != b1 && err == nil {
				t.Errorf("%s: stale write (5) accepted: %s -> %s", desc, b1, a)
			}
			if err != nil && !cfggenTyped(err) {
				t.Errorf("%s: stale: untyped %v", desc, err)
			}
			b2 := row(2)
			err = cfggenRun(ctx, db, c, 0, 2)
			stats["notoken:"+cfggenClass(err)]++
			if a := row(2); a != b2 {
				t.Errorf("%s: no-token write changed the row: %s -> %s (err %v)", desc, b2, a, err)
			}
			if err != nil && !cfggenTyped(err) {
				t.Errorf("%s: no token: untyped %v", desc, err)
			}
			err = cfggenRun(ctx, db, c, 20, 1)
			stats["current:"+cfggenClass(err)]++
			if err != nil && k.ShowLog {
				t.Logf("%s: current token refused: %.300v", desc, err)
			}
		})
	}
}

package fencedsql

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"go.opentelemetry.io/otel/metric"
)

// Option configures a wrapped driver or connector.
type Option func(*config)

type config struct {
	dialect dialect.Dialect
	guards  []schema.GuardSpec
	// catalogViews: the relations through which a write reaches a system catalog,
	// read at the pool's first connection (registry.go, loadCatalogViews).
	catalogViews []plan.CatalogView
	strict       bool
	schemaCheck  bool
	recheck      time.Duration // WithSchemaRecheck
	allowDDL     bool
	allowDyn     bool
	cacheSize    int
	stmtCache    int
	logger       *slog.Logger
	loggerGiven  bool // WithLogger gave logger (else it discards: configLogger)
	meter        metric.MeterProvider
	tokens       TokenSource // WithTokenSource
	explicit     setting     // the settings an option gave explicitly (optionConflict)
	fromDSN      setting     // the settings the DSN gave (withDSN), named by warnChecksOff
	fromBoth     setting     // the settings the DSN and the code both gave (withDSN)
}

// setting names a boolean setting an option or a DSN parameter can give: explicit
// records which ones were given, so that a DSN parameter contradicting an option given
// in code is refused (optionConflict), not silently applied after it.
type setting uint

const (
	setStrict      setting = 1 << iota // WithStrict, fenced_strict
	setSchemaCheck                     // WithSchemaCheck, fenced_schema_check
	setDDL                             // WithDDL, fenced_allow=ddl
	setDynamic                         // WithDynamicSQL, fenced_allow=dynamic_sql
)

// settings are the explicit settings, with their option and DSN spellings and value.
var settings = []struct {
	bit         setting
	option, dsn string
	get         func(*config) bool
}{
	{setStrict, "WithStrict", ParamStrict, func(c *config) bool { return c.strict }},
	{setSchemaCheck, "WithSchemaCheck", ParamSchemaCheck, func(c *config) bool { return c.schemaCheck }},
	{setDDL, "WithDDL", ParamAllow + "=ddl", func(c *config) bool { return c.allowDDL }},
	{setDynamic, "WithDynamicSQL", ParamAllow + "=dynamic_sql", func(c *config) bool { return c.allowDyn }},
}

// optionConflict refuses a DSN whose fenced_* parameters contradict an option given in
// code (red-team rt28a F5): WithSchemaCheck(true) and fenced_schema_check=false,
// WithStrict(false) and fenced_strict=true, WithDDL(false) or WithDynamicSQL(false) and
// the fenced_allow value that turns it on. Either could be the one meant — a code-level
// WithSchemaCheck(true) is usually there to stop a test DSN from switching the checks
// off in production — so neither wins: the pool does not open (a *ConfigError naming
// both). A DSN parameter that repeats the option's value, or gives a setting the code
// leaves at its default, applies as before.
func optionConflict(code, dsn []Option) error {
	a, b := defaultConfig(), defaultConfig()
	for _, o := range code {
		o(&a)
	}
	for _, o := range dsn {
		o(&b)
	}
	for _, s := range settings {
		if a.explicit&s.bit == 0 || b.explicit&s.bit == 0 || s.get(&a) == s.get(&b) {
			continue
		}
		return configErr("the DSN parameter %s (%v) contradicts %s(%v) given in code: a configuration the wrapper cannot honour both of; remove the parameter from the DSN or change the option", s.dsn, s.get(&b), s.option, s.get(&a))
	}
	return nil
}

// withDSN returns the options of a pool opened with a DSN: code's, then the DSN's
// parameters' (dsn), which apply after them unless they contradict one
// (optionConflict), recording which settings the DSN gave (config.fromDSN). sql.Open
// with a fenced driver name and OpenDB over a DSNConnector both combine them so.
func withDSN(code, dsn []Option) ([]Option, error) {
	if err := optionConflict(code, dsn); err != nil {
		return nil, err
	}
	given, coded := defaultConfig(), defaultConfig()
	for _, o := range dsn {
		o(&given)
	}
	for _, o := range code {
		o(&coded)
	}
	opts := append(slices.Clip(code), dsn...)
	return append(opts, func(c *config) {
		c.fromDSN |= given.explicit
		c.fromBoth |= given.explicit & coded.explicit
	}), nil
}

func defaultConfig() config {
	return config{schemaCheck: true, recheck: DefaultSchemaRecheck, cacheSize: 1024, stmtCache: defaultStmtCache, logger: slog.New(slog.DiscardHandler)}
}

// GuardOption configures one guarded table.
type GuardOption func(*schema.GuardSpec)

// TokenColumn names the table's fence-token column (default "fence_token").
func TokenColumn(name string) GuardOption { return func(g *schema.GuardSpec) { g.TokenColumn = name } }

// VersionColumn names the table's version column (default "version").
func VersionColumn(name string) GuardOption {
	return func(g *schema.GuardSpec) { g.VersionColumn = name }
}

// Guard marks table as guarded: every INSERT, UPDATE, DELETE and upsert on it is
// fenced. table may be schema-qualified; an unqualified name guards the table of that
// name in any schema.
func Guard(table string, opts ...GuardOption) Option {
	g := schema.GuardSpec{Table: table, TokenColumn: schema.DefaultTokenColumn, VersionColumn: schema.DefaultVersionColumn}
	for _, o := range opts {
		o(&g)
	}
	return func(c *config) { c.guards = append(c.guards, g) }
}

// WithDialect selects the dialect (postgres.Dialect, mysql.Dialect, sqlite.Dialect).
// The names the dialect packages register set it already.
//
// A dialect's optional capabilities (the interfaces of package dialect beside
// dialect.Dialect: reading what the database records as guarded, finding guard
// triggers, the session and name-resolution checks, …) are found by type assertion
// on the value given. A customised dialect that embeds a stock one as its
// dialect.Dialect interface hides all of them, and each missing one is a check the
// wrapper skips. So a dialect that bears the Name of a registered stock dialect
// ("postgres", "mysql", "sqlite") but lacks any capability that dialect implements is
// refused: the pool does not open (a *ConfigError naming the missing capabilities;
// red-team rt44b F2). Forward each capability of the stock dialect, or give a dialect
// meant to lack some a Name of its own.
func WithDialect(d dialect.Dialect) Option { return func(c *config) { c.dialect = d } }

// WithStrict accepts only tokens strictly greater than a row's fence token: a holder
// cannot write the same row twice under one lease, and retries are refused. The default
// accepts equal tokens (idempotent retries). A locking read under a token (SELECT … FOR
// UPDATE in a token-bound transaction) claims its rows — it stamps them with the token
// — and that is the one write: in strict mode a later UPDATE or DELETE of a
// claimed row under the same lease is refused with ErrFenced. A read-modify-write in
// strict mode reads without FOR UPDATE and relies on ExpectVersion instead.
func WithStrict(strict bool) Option {
	return func(c *config) { c.strict = strict; c.explicit |= setStrict }
}

// WithSchemaCheck turns the lazy checks on or off (default on): before the first guarded
// write to a table the wrapper verifies that the table has both fencing columns NOT
// NULL (cached per table), and that the session is one the rewriter can trust: on
// MySQL/MariaDB sql_mode and character_set_client, and the protected settings a DSN
// parameter or init_connect could set unseen (sql_log_bin, autocommit,
// completion_type, a timestamp set by hand, MariaDB's skip_replication, server_id,
// gtid_domain_id and gtid_seq_no), read before the first guarded write
// on a connection and again after any statement that may have changed them; on
// PostgreSQL standard_conforming_strings and client_encoding, which pgx reports without
// a query and which are checked before every guarded write even when this is off (other
// drivers: one query before each guarded write). An untrusted session fails with a
// *SessionError (errors.Is ErrSchema). With it off, the settings that change how the
// server reads statement text (MySQL/MariaDB ANSI_QUOTES, NO_BACKSLASH_ESCAPES and the
// modes implying them, character_set_client; PostgreSQL's two under a driver that does
// not report them) are still checked, with the same query, once per connection and
// again after a statement that may have changed them (never per statement): a query
// that fails (a mock's) is logged, an answer obeyed (red-team rt34d F4). With it on, a dialect that spells its
// transaction end so that no session setting changes it (dialect.TxEnder:
// MySQL/MariaDB's COMMIT/ROLLBACK AND NO CHAIN NO RELEASE) ends every transaction with
// that statement instead of the driver's Commit and Rollback. Turn it off in unit tests against go-sqlmock,
// whose expectations would otherwise have to include those queries. It does not turn
// off what the database records as guarded (the registry, the guard's triggers): the
// pool's first connection reads those, and asks whether the listed tables exist,
// whatever this says (red-team rt34d F1), and with the check off a read that fails — a
// mock answers none of them, and sqlmock leaves its expectations untouched by a query it
// did not expect — is logged (WithLogger) instead of failing the pool; an answer (no
// such table) is obeyed. A pool running with the check off says so at its first
// connection (a Warn naming the parameter or option that turned it off: WithLogger). A production DSN copied from a test set-up still guards what the database
// says is guarded — but its sessions go unchecked: on MySQL/MariaDB a non-strict
// sql_mode (the DSN's, the server's default) then stores a stale write's refused token
// as 0 with a warning instead of failing it, and the write succeeds, unless the
// database-side guard is installed (its triggers refuse it whatever the sql_mode). Never
// run a pool with the check off against a real database without the guard. Given in
// code, this option is not overruled by a DSN: a fenced_schema_check parameter that
// says otherwise makes Open fail with a *ConfigError (so do fenced_strict against
// WithStrict, and fenced_allow against WithDDL(false) or WithDynamicSQL(false)).
func WithSchemaCheck(on bool) Option {
	return func(c *config) { c.schemaCheck = on; c.explicit |= setSchemaCheck }
}

// DefaultSchemaRecheck is how long a pool trusts its lazy check of a table by default
// (WithSchemaRecheck).
const DefaultSchemaRecheck = time.Minute

// NeverRecheck, given to WithSchemaRecheck, keeps a lazy check's verdict for the pool's
// life: a schema changed while the pool runs is found only by pools opened later.
// Any negative duration means the same. A pool running so says it at its first
// connection (a Warn, see WithLogger).
const NeverRecheck time.Duration = -1

// WithSchemaRecheck bounds how long a pool trusts the lazy check of a table (its fencing
// columns, its declaration and the side doors a statement through the pool opens; see
// WithSchemaCheck): the first guarded write to the table after d runs the check again,
// before it is sent. A schema changed by a migration while the pool runs — a rebuilt or
// swapped table that lost a constraint or its guard's triggers, a trigger, rule or
// updatable view added over it — is then found within d instead of when the pool is
// reopened. Default DefaultSchemaRecheck; a check that fails is never cached, so a fix
// takes effect at the next write.
//
// d == 0 caches nothing: the checks run before every guarded write (their queries
// each time: for tests and investigations, not for production). The zero value of a
// time.Duration — a configuration field left unset — thus picks the safest setting,
// never the least safe (red-team rt34d F6: 0 used to mean "never"). Never re-checking
// takes an explicit negative value, NeverRecheck.
func WithSchemaRecheck(d time.Duration) Option { return func(c *config) { c.recheck = d } }

// WithDDL allows DDL that names a guarded table (CREATE, ALTER, DROP, RENAME, COMMENT,
// GRANT, CREATE VIEW/RULE/TRIGGER/FUNCTION whose body names it, …) through the fenced
// pool. By default such statements fail with ErrUnsupported: a schema change can
// remove the fence (DROP NOT NULL, a trigger or rule that writes) or rewrite rows (ALTER
// … TYPE … USING) without a token, and the lazy schema check would not notice after it
// cached its verdict. Run migrations on a plain connection instead. DDL that creates,
// replaces or alters a function, procedure, trigger, rule, event or package is refused
// on a pool with guarded tables whatever its body names (its body runs SQL the wrapper
// never sees); WithDDL allows it too. Other DDL that names no guarded table always
// passes; TRUNCATE of a guarded table is refused even when allowed, and so is an ALTER
// TABLE of a guarded table that changes a column's type, renames or drops a column, or
// (MySQL/MariaDB) converts its character set: it would replace a fencing or key column
// without the row triggers (docs/design.md, rt42a F1, F2); so is DDL that renames or
// moves a guarded table, or another relation onto a guarded name (ALTER … RENAME, RENAME
// TABLE, SET SCHEMA), and an ALTER TABLE of a guarded table with an action the planner
// does not recognise (rt43c F1, F2). Since the pool
// may be the one that creates its listed tables, a listed table that does not exist at
// its first connection does not fail it: the pool refuses every statement that may
// write rows (of any table: a typo's real table among them) with ErrSchema naming the
// missing table until it exists, and lets DDL, reads and session statements through
// (red-team rt34d F2). Create the listed tables before writing anything. A pool with
// DDL allowed says so at its first connection (a Warn: WithLogger).
func WithDDL(allow bool) Option {
	return func(c *config) { c.allowDDL = allow; c.explicit |= setDDL }
}

// WithDynamicSQL allows statements whose effect the wrapper cannot see — PREPARE …
// FROM/AS, EXECUTE, EXECUTE IMMEDIATE, PostgreSQL DO blocks, CALL of a procedure, MariaDB
// compound statements (BEGIN NOT ATOMIC … END) — on a pool with guarded tables. By
// default they fail with ErrUnsupported whatever they name, since the SQL they run is
// built at run time. Allowing them leaves the guarded tables to the database-side guards
// (schema.Check, fencedsql-schema); a PREPARE whose own text names a guarded table is
// still refused. A function called from a SELECT may write too: the wrapper cannot see
// that either, and only the database-side guards refuse such writes. Dynamic SQL can
// also change the protected session settings (session_replication_role, sql_log_bin …)
// with a name or value built at run time: allow it only for code you trust, and give
// the application role no privilege to set them (fencedsql-schema's least-privilege
// set-up). A pool with dynamic SQL allowed says so at its first connection (a Warn:
// WithLogger).
//
// Dynamic SQL can also end the open transaction and succeed: on MySQL/MariaDB a
// procedure or compound statement that COMMITs, EXECUTE IMMEDIATE of COMMIT or DDL (an
// implicit commit), a procedure whose handler swallows the deadlock InnoDB rolled the
// whole transaction back for. After such a statement succeeds inside a transaction the
// wrapper asks the server whether it still holds one (MariaDB @@in_transaction, one
// round trip after these statements only; MySQL has no such variable, and every such
// statement ends the wrapper's transaction there). If not, the statement returns an
// error, the transaction's later statements are refused unsent, and Commit and
// Rollback send only a ROLLBACK and return an error whose outcome is Unknown: the
// writes may be committed (past Commit's lease check, though each was fenced when
// sent) or rolled back, and the wrapper cannot tell which. EXECUTE IMMEDIATE of a
// string literal is judged as that statement sent alone (EXECUTE IMMEDIATE 'COMMIT'
// is refused, 'CREATE TABLE …' refused inside a transaction). On MySQL/MariaDB the
// wrapper also sets a savepoint before each such statement inside a transaction and
// releases it after (two round trips): a statement that ended the transaction and
// began another (COMMIT or ROLLBACK, then START TRANSACTION, in a procedure) took the
// savepoint with it, and the transaction ends the same way. Outside a transaction a
// savepoint is set and released after each such statement: when the release succeeds
// the statement left a transaction open, which is rolled back; the statement fails
// (ErrUnsupported, outcome Unknown) and the connection is discarded (its later
// statements answer driver.ErrBadConn). PostgreSQL refuses
// COMMIT inside a procedure or DO block called in a transaction; its PREPARE
// TRANSACTION is refused as transaction control even with this option.
func WithDynamicSQL(allow bool) Option {
	return func(c *config) { c.allowDyn = allow; c.explicit |= setDynamic }
}

// WithCacheSize bounds the number of statement texts whose rewrite is cached
// (default 1024).
func WithCacheSize(n int) Option { return func(c *config) { c.cacheSize = n } }

// defaultStmtCache is WithStatementCache's default.
const defaultStmtCache = 64

// WithStatementCache bounds the statements each connection keeps prepared for the
// wrapper's own SQL (default 64; 0 turns the cache off). It matters only for a
// driver that runs a statement with arguments as a prepared statement
// (go-sql-driver/mysql without interpolateParams): a guarded write, a claim or a
// claimed read sent again on the connection is then one EXECUTE instead of PREPARE,
// EXECUTE and CLOSE. Statements an application sends unchanged are not cached: they
// are prepared by database/sql as before. Each cached statement holds a server-side
// prepared statement for the life of the connection (MySQL's max_prepared_stmt_count
// bounds them across all connections: keep n × the pool's MaxOpenConns below it).
func WithStatementCache(n int) Option {
	return func(c *config) {
		if n < 0 {
			n = 0
		}
		c.stmtCache = n
	}
}

// WithLogger sets the structured logger (default: discard). Fenced writes and refused
// statements are logged at Warn with the table and token, never row data. What
// weakens the pool's configuration — a check turned off (warnChecksOff), a listed
// table that does not exist yet — is logged at Warn at its first connection here, and,
// without a logger given (the driver names the dialects register carry none), by
// slog.Default(), the process's logger (stderr unless the application set another):
// a pool that runs with a check off is never silent. WithLogger(slog.New(
// slog.DiscardHandler)) silences it too.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger, c.loggerGiven = l, true
		}
	}
}

// configLogger is the logger of what weakens the configuration: WithLogger's, else
// slog.Default() (WithLogger).
func (c *config) configLogger() *slog.Logger {
	if c.loggerGiven {
		return c.logger
	}
	return slog.Default()
}

// newRewriter validates the guard list and builds the planner.
func (c *config) newRewriter() (*plan.Planner, error) {
	if c.dialect == nil {
		return nil, configErr("no dialect: use WithDialect or a name registered by a dialect package")
	}
	if err := dialectComplete(c.dialect); err != nil {
		return nil, err
	}
	pc := plan.PlannerConfig{
		Syntax: c.dialect.Syntax(), NumberedParams: c.dialect.NumberedParams(), QuoteIdent: c.dialect.QuoteIdent,
		SessionChecked: c.dialect.SessionQuery() != "",
		Strict:         c.strict, AllowDDL: c.allowDDL, AllowDynamic: c.allowDyn,
		CatalogViews: c.catalogViews,
	}
	_, pc.UniqueKeyTombstones = c.dialect.(dialect.UniqueTombstoner)
	if f, ok := c.dialect.(dialect.DeleteFencer); ok {
		pc.DeleteFence = func(schema, name, tokenCol string) (string, string) {
			return f.DeleteFence(dialect.TableName{Schema: schema, Name: name}, tokenCol)
		}
	}
	for i, gs := range c.guards {
		t, err := gs.Validate()
		if ne := (*dialect.NameError)(nil); errors.As(err, &ne) {
			return nil, configErr("guarded table %q: %s", gs.Table, ne.Problem)
		}
		if err := fencingColumnsReadable(c.dialect, gs); err != nil {
			return nil, err
		}
		for _, prev := range c.guards[:i] {
			if sameGuardedTable(c.dialect, prev, gs) && !sameColumns(c.dialect, prev, gs) {
				pt, pv := guardColumns(prev)
				gt, gv := guardColumns(gs)
				return nil, configErr("guarded table %q is given twice with other fencing columns (%s and %s as %q, %s and %s as %q): a statement would be fenced on either; name it once, or qualify both with their schemas if they are two tables",
					gs.Table, pt, pv, prev.Table, gt, gv, gs.Table)
			}
		}
		pc.Tables = append(pc.Tables, plan.TableSpec{Schema: t.Schema, Name: t.Name, TokenColumn: gs.TokenColumn, VersionColumn: gs.VersionColumn})
	}
	return plan.NewPlanner(pc), nil
}

// fencingColumnsReadable refuses fencing column names the planner cannot compare as
// the server does. MySQL/MariaDB compare column names by the lower case of each
// character in their own case table, which differs from Go's for hundreds of
// non-ASCII capitals (Georgian Mtavruli, U+023A …): with a version column ვერსია, a
// write of an ordinary column ᲕᲔᲠᲡᲘᲐ was taken for the version column and dropped
// (red-team rt38a F6). ASCII names compare alike on both sides (sqllex.SameName, and
// the server test TestSameColumnNameAgreesWithServer), so there the fencing columns
// must be ASCII: a *ConfigError otherwise, from Open for a listed table and at the
// first connection for a registered one.
func fencingColumnsReadable(d dialect.Dialect, gs schema.GuardSpec) error {
	if d.Syntax() != sqllex.MySQL {
		return nil
	}
	tok, ver := guardColumns(gs)
	for _, col := range []string{tok, ver} {
		for _, r := range col {
			if r >= utf8.RuneSelf {
				return configErr("guarded table %q: fencing column %q is not ASCII: MySQL/MariaDB compare column names by a case table the wrapper cannot repeat for non-ASCII letters, so a write of another column could be taken for it; rename the column to an ASCII name (ALTER TABLE … RENAME COLUMN) and configure that", gs.Table, col)
			}
		}
	}
	return nil
}

// sameGuardedTable reports whether two guard specs may name one table: the same name
// (folded) and the same qualifier, or no qualifier on one of them — an unqualified
// name resolves to whichever schema (database, attached file) the session finds, and
// the planner guards a reference by its last name part. It is the one comparison
// behind two guards given to one pool and a listed guard against the registry's.
// Table names fold whatever the dialect (unlike column names, sameColumns): the
// planner keys its guards by the folded name, so two spellings are one guard to it,
// and taking them for one table only refuses more. Each part compares as d's server
// keeps it (dialect.SameRecordedName: PostgreSQL's first 63 bytes), as the planner
// keys it (red-team rt56a F3).
func sameGuardedTable(d dialect.Dialect, a, b schema.GuardSpec) bool {
	ta, errA := dialect.ParseTableName(a.Table)
	tb, errB := dialect.ParseTableName(b.Table)
	if errA != nil || errB != nil {
		return strings.EqualFold(a.Table, b.Table)
	}
	syn := d.Syntax()
	return dialect.SameRecordedName(syn, ta.Name, tb.Name) && (ta.Schema == "" || tb.Schema == "" || dialect.SameRecordedName(syn, ta.Schema, tb.Schema))
}

// guardColumns returns gs's token and version columns, defaults filled in.
func guardColumns(gs schema.GuardSpec) (token, version string) {
	return orDefault(gs.TokenColumn, schema.DefaultTokenColumn), orDefault(gs.VersionColumn, schema.DefaultVersionColumn)
}

// sameColumns reports whether a and b fence on the same columns, compared as d
// compares column names (dialect.SameColumnName: exactly on PostgreSQL, where "Tok"
// and tok are two columns).
func sameColumns(d dialect.Dialect, a, b schema.GuardSpec) bool {
	at, av := guardColumns(a)
	bt, bv := guardColumns(b)
	return dialect.SameColumnName(d, at, bt) && dialect.SameColumnName(d, av, bv)
}

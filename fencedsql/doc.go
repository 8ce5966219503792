// Package fencedsql is a database/sql driver wrapper that enforces fencing tokens inside
// the database.
//
// A lock holder that was paused or partitioned past its lease can wake up and write
// anyway. With fencedsql, every write to a guarded table carries the fencing token of
// the writer's lease, and the database itself refuses a write whose token is older than
// the one that last wrote the row: the late write fails with ErrFenced instead of
// overwriting newer data.
//
// # Use
//
//	import _ "github.com/fencedsql/fencedsql/dialects/postgres" // registers "fenced-pgx"
//
//	db, err := sql.Open("fenced-pgx", "postgres://app@db/shop?fenced_tables=accounts")
//	lease, err := locks.Acquire(ctx, "account:42")
//	ctx = fencedsql.WithLease(ctx, lease)
//	tx, err := db.BeginTx(ctx, nil) // bound to lease.Token()
//	_, err = tx.ExecContext(ctx, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`, 10, 42)
//	if errors.Is(err, fencedsql.ErrFenced) { /* a newer holder wrote this row: stop */ }
//
// Guarded tables need two columns, by default
//
//	fence_token BIGINT NOT NULL DEFAULT 0  -- the token that last wrote the row
//	version     BIGINT NOT NULL DEFAULT 0  -- incremented by every guarded UPDATE
//
// The wrapper checks them lazily, before the first guarded write to a table and again
// after WithSchemaRecheck's interval (one minute by default), and fails with ErrSchema
// naming the DDL that adds them (WithSchemaCheck(false) turns the check off, e.g. for
// go-sqlmock tests).
//
// Guards match the object a statement resolves to, not the text (docs/design.md G13):
// any table reference whose last name part is a guarded table's name (case folded; on
// PostgreSQL truncated to 63 bytes, as the server truncates identifiers) is guarded,
// whatever its qualifier — a renamed schema (p2.accounts for a guard on
// public.accounts), main. or an ATTACH alias on SQLite, another database on MySQL, or
// the name unqualified. It is fenced with the guard's columns, and its lazy check runs
// on the name as the statement writes it, so the object that name resolves to is
// either fit for fencing or the write is refused with ErrSchema naming it. Unqualified
// names resolve through the session: a statement that may change that (PostgreSQL SET
// search_path / SET SCHEMA / SET ROLE / RESET ALL / DISCARD, set_config('search_path',
// …), DO, CALL, EXECUTE; MySQL USE; SQLite ATTACH/DETACH) re-arms the checks of its
// connection, which from then on caches them per connection instead of per pool.
//
// # Packages
//
// This package is what an application calls. Beside it:
//
//   - [github.com/fencedsql/fencedsql/fencedsql/schema]: the schema toolkit for
//     operators and migrations — Check (problems and the DDL that fixes them),
//     RegisterTables, PurgeTombstones, the token floor; cmd/fencedsql-schema runs it;
//   - [github.com/fencedsql/fencedsql/fencedsql/fencedtest] and
//     [github.com/fencedsql/fencedsql/fencedsql/fencedpgx]: go-sqlmock expectations for
//     your own tests, and fencing for pgx without database/sql;
//   - [github.com/fencedsql/fencedsql/fencedsql/dialect]: what a dialect implements,
//     for the dialect packages (dialects/postgres, dialects/mysql, dialects/sqlite),
//     which register the fenced drivers.
//
// # How a write is fenced (the design and why)
//
// The token check must happen in the same statement as the write (no read-then-write
// window), and a refused write must fail, not quietly match zero rows: callers read
// "0 rows affected" as "not found", and a multi-row statement filtered by
// "AND fence_token <= $t" would apply to the unfenced rows and skip the others. So the
// wrapper makes the fenced case an error inside the statement:
//
//	UPDATE accounts SET balance = balance - $1,
//	       "version" = "version" + 1,
//	       "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END
//	WHERE id = $2
//
// A row carrying a newer token gets NULL in a NOT NULL column, the database raises its
// NOT NULL violation (PostgreSQL 23502, MySQL 1048, SQLite SQLITE_CONSTRAINT_NOTNULL)
// and undoes the whole statement, and the wrapper maps that error on the token column
// to ErrFenced. The happy path is one statement with no extra round trip
// (docs/design.md, G6), and the token is a bind parameter, never SQL text, so prepared
// statements and the drivers' statement caches keep one entry per statement
// (docs/design.md, G5). Equal tokens are accepted (a holder may write a row several
// times and retries are idempotent); WithStrict(true) accepts only strictly greater
// ones.
//
//   - UPDATE: the two assignments are appended to the SET list, version first, because
//     MySQL evaluates single-table assignments left to right and the version expression
//     must see the old token.
//   - INSERT (multi-row VALUES too): the two columns are added with the token and
//     version 1. Upserts (ON CONFLICT … DO UPDATE, ON DUPLICATE KEY UPDATE) get the
//     UPDATE assignments, qualified with the target table inside ON CONFLICT.
//   - DELETE has no SET list, so it runs as two statements in one transaction (the
//     caller's, or one the wrapper opens): a fencing UPDATE of the same rows, which fails
//     as above or stamps the token on them and locks them, then the DELETE restricted to
//     rows carrying that token — or, where the table's database-side guard takes it
//     (PostgreSQL, MariaDB: dialect.DeleteFencer), as one statement carrying the fence.
//     DELETE … RETURNING runs anywhere as the one statement (the caller gets its own
//     columns of the rows as they were stored); as two statements it must run inside
//     the caller's transaction. When the DELETE of the two statements fails inside the
//     caller's transaction after its fencing UPDATE stamped rows (a user's trigger, a
//     foreign key), MySQL/MariaDB and SQLite undo only the DELETE: the wrapper marks
//     the transaction so that Commit rolls it back (NotCommitted), and the DELETE's
//     error says so; the same for a two-statement claim whose read fails (PostgreSQL
//     aborts the transaction on any error itself).
//   - A statement that assigns the token or version column itself (an ORM model that
//     maps them: INSERT column lists and VALUES rows, SET lists, upsert update lists
//     with excluded./VALUES()/row-alias values) is fenced with those assignments
//     replaced: the caller's items and their arguments are dropped (PostgreSQL's $n are
//     renumbered) and the wrapper's own take their place, so the caller can neither
//     lower the token nor choose the version. Only a row assignment (a, fence_token) =
//     (…) is refused.
//   - UPDATE … FROM (PostgreSQL, SQLite) and a WITH list that only reads before an
//     UPDATE or INSERT are fenced like the plain forms; inside UPDATE … FROM the fencing
//     CASE reads the target row's columns, qualified with the target's name or alias.
//   - SELECT … FOR UPDATE / FOR NO KEY UPDATE of one guarded table, in a statement
//     that carries a token, claims the rows it locks: a fencing UPDATE over the same
//     rows runs first (same WHERE; ORDER BY/LIMIT through the row locator ctid on
//     PostgreSQL — also for rows another transaction updated while the claim waited —
//     natively on MySQL), and the read then returns exactly the rows that UPDATE
//     stamped (their ctids on PostgreSQL, their primary keys on MySQL/MariaDB), so an
//     older holder's late write is refused even if the new holder only read, and the read fails with ErrFenced if a newer token owns
//     a row. Without a token it is an ordinary locking read. FOR SHARE, FOR KEY SHARE and
//     LOCK IN SHARE MODE claim the same way, as does the read in parentheses or (PostgreSQL)
//     after a WITH list that only reads; any other locking read of a guarded table (in a
//     subquery, a WITH query, a cursor, SELECT … INTO) is refused with a token. Plain
//     SELECTs never claim. SQLite has no FOR UPDATE:
//     claim with a guarded UPDATE (SET col = col) before the read.
//   - ExpectVersion(ctx, v): the version assignment becomes
//     CASE WHEN version = v THEN version + 1 WHEN fence_token <= t THEN NULL ELSE version END,
//     so a mismatch with a valid token fails on the version column (ErrVersionConflict)
//     and a stale token still fails on the token column (ErrFenced).
//
// Dialect corners: MySQL in a non-strict sql_mode stores 0 instead of failing, so the
// MySQL dialect checks each connection's sql_mode before its first guarded write and
// refuses non-strict (and ANSI_QUOTES, NO_BACKSLASH_ESCAPES) sessions with ErrSchema; a
// "SET … sql_mode" statement through the wrapper re-arms the check. MySQL's UPDATE/INSERT
// IGNORE and SQLite's OR REPLACE/IGNORE/FAIL change what a NOT NULL violation does and
// are refused on guarded tables. MySQL tables must be InnoDB (statement atomicity).
//
// # What the wrapper refuses, and why
//
// On a pool with guarded tables the wrapper is an allowlist: a statement that names a
// guarded table passes only as a read it understands or as a write it fences. The
// refusals below fail with ErrUnsupported (an *UnsupportedError naming the table and
// the reason) and send nothing; fencedsql: TestRewriteRefused, TestRewriteControlStatements,
// TestRewriteClaimRefusedOrPassed, TestBackstopFindsEveryModifierRun, TestGuardObjectsRefused,
// TestGuardRemovingDDLRefused, TestProtectedSettingsRefused and internal/redteam prove them.
//
//	statement                                      why                                                     unless
//	---------------------------------------------  ------------------------------------------------------  ------------------
//	no token on a guarded write                    nothing to compare (ErrNoToken)                         a token
//	a guarded write on an untrusted session:       the server would read the text differently from the     reset the setting
//	  non-strict sql_mode, ANSI_QUOTES, NO_BACK-     lexer, or store 0 for the fencing NULL (*SessionError,
//	  SLASH_ESCAPES, GBK/SJIS/BIG5 client charset,   errors.Is ErrSchema)
//	  latin1 and the other single-byte charsets
//	  whose no-break space is whitespace,
//	  standard_conforming_strings=off
//	a guarded write on a MySQL/MariaDB session     its write would not be committed (autocommit off,       reset the setting,
//	  with a protected setting set where the         CHAIN), or not replicated, or its tombstones dated by   or close the
//	  wrapper could not see it (a DSN parameter,     a clock set by hand and purged early (*SessionError)    connection
//	  init_connect, Raw): sql_log_bin = 0,
//	  autocommit = 0, completion_type CHAIN or
//	  RELEASE, a timestamp set by hand, MariaDB
//	  skip_replication, server_id, gtid_domain_id,
//	  gtid_seq_no, wsrep_on or
//	  system_versioning_asof
//	any statement judged by its text on a session  a write could hide in what the lexer reads as a         reset the setting
//	  that reads text differently (the settings      string or one word (SessionError.Reading); checked
//	  above but sql_mode strictness, synchronous_    whenever pgx reports the settings, else after a
//	  commit and the MySQL settings of the row       statement that may have changed them
//	  before)
//	BEGIN, START TRANSACTION, COMMIT, ROLLBACK,    text-level transactions escape the binding, and the     use db.BeginTx
//	  END, XA, SET autocommit, MySQL LOCK TABLES   wrapper's own DELETE transaction would commit them
//	SAVEPOINT, RELEASE, ROLLBACK TO outside a      SQLite's SAVEPOINT opens a transaction the wrapper      send it inside
//	  transaction the wrapper began                does not know of (RELEASE commits it unchecked)         db.BeginTx
//	PostgreSQL: a savepoint statement, or one      the server may revert the transaction's recorded token  send it alone, or
//	  that may change the session, followed by     before the later statements run, and a row they delete  as the batch's
//	  others in one text or batch, in a            would be tombstoned below the raised token              last statement
//	  transaction whose statements carried two
//	  tokens
//	MySQL/MariaDB statements that commit           the server commits the transaction's fenced writes      send it outside
//	  implicitly, inside a transaction the         at once, unchecked, and runs the later statements in    the transaction
//	  wrapper began: CREATE, ALTER, DROP (not      autocommit
//	  … TEMPORARY TABLE), RENAME, TRUNCATE,
//	  ANALYZE/CHECK/OPTIMIZE/REPAIR TABLE, CACHE
//	  INDEX, LOAD INDEX, FLUSH, RESET, GRANT,
//	  REVOKE, users and roles, SET PASSWORD,
//	  replication control, SHUTDOWN
//	any statement of a transaction the server      MySQL/MariaDB rolled it back (deadlock victim 1213,      retry the whole
//	  rolled back (Commit: NotCommitted)             1205 under innodb_rollback_on_timeout) and would run     transaction
//	                                                 the statement in autocommit
//	PREPARE TRANSACTION (PostgreSQL)               it ends the session's transaction                        —
//	EXECUTE [IMMEDIATE], PREPARE, DO, CALL,        the SQL they run is built at run time: unseen;          WithDynamicSQL(true)
//	  BEGIN NOT ATOMIC … END, EXPLAIN ANALYZE        allowed, one that ends the transaction (MySQL/MariaDB)  (fenced_allow=dynamic_sql)
//	                                                 ends the wrapper's (its outcome Unknown)
//	  EXECUTE, CREATE TABLE … AS EXECUTE,
//	  query_to_xml*, ts_stat, ts_rewrite, dblink*
//	TRUNCATE … CASCADE, COPY … PROGRAM, BINLOG     they reach guarded tables without naming them           —
//	a text the lexer cannot read that names a      its meaning cannot be judged                            —
//	  guarded table, starts with a comment, holds
//	  ';' or starts with a judged head
//	PREPARE/DO whose text names a guarded table    a write hidden in a string                              —
//	DDL naming a guarded table (in an identifier   DROP NOT NULL, a trigger, rule, view or function body,  WithDDL(true)
//	  or in a body): CREATE, ALTER, DROP, RENAME,    ALTER … USING can remove the fence or rewrite rows;     (fenced_allow=ddl);
//	  COMMENT, GRANT, REVOKE, REPAIR, …               migrations belong on a plain connection                  run it plainly
//	DDL whose query writes a guarded table         CREATE TABLE … AS WITH … UPDATE writes unfenced        —
//	ALTER TABLE of a guarded table that renames    replaces a fencing or key column without the row       —
//	  or drops a column, changes a column's type,    triggers: tokens reset, tombstones read another key
//	  or CONVERTs TO CHARACTER SET                   (docs/design.md, rt36a F1, rt42a F1, F2)
//	ALTER … RENAME [TO], RENAME TABLE, SET         a guarded table renamed away could have a column       —
//	  SCHEMA naming a guarded table (moved away    replaced under an unguarded name and come back
//	  or onto its name); an ALTER TABLE of a       (rt43c F2); an unplaced clause may hide a column
//	  guarded table with an action start the       change (rt43c F1)
//	  planner cannot read
//	SELECT … INTO [TEMP] <guarded name>            CREATE TABLE AS; a temporary table would shadow the     WithDDL(true)
//	                                                 guarded one for the rest of the session
//	TRUNCATE, COPY, LOAD, REPLACE, MERGE,           writes with no row-level place for the token            —
//	  and any unknown statement
//	SET naming a guarded table                     MariaDB SET STATEMENT … FOR <write> wraps a write       —
//	anything but a plain read that names a guard   the guards guard themselves (docs/design.md G15):        — (not WithDDL, not
//	  object: the prefix fencedsql_ is reserved      deleting tombstones, dropping or replacing a guard       WithDynamicSQL;
//	  (any case, quoted, qualified, U&"…", in a      function, disabling or renaming a trigger, or a          fencedsql-schema
//	  string or body at an identifier boundary,      TEMP table that shadows the tombstone table would let    on a plain
//	  escapes decoded); also pg_settings. Reads:     an older holder write again; a column of your own        connection)
//	  SELECT/WITH/TABLE/SHOW/EXPLAIN/PRAGMA          named fencedsql_… is refused in writes too. The SQL
//	  without INTO, FOR UPDATE/SHARE or a call of    lock backend's fencedsql_locks* objects are not
//	  a guard function                               guard objects
//	DROP SCHEMA/EXTENSION … CASCADE, DROP OWNED,   they drop, hand over or switch off guard objects         —
//	  REASSIGN OWNED, MySQL DROP DATABASE/SCHEMA,    without naming them
//	  ALTER TABLE … DISABLE TRIGGER, ENABLE
//	  REPLICA/ALWAYS TRIGGER (any table)
//	ALTER TABLE … ENABLE TRIGGER/RULE, ALTER       they switch on a trigger or rule, whose body may          —
//	  EVENT TRIGGER … ENABLE (any relation)          write a guarded table, as CREATE TRIGGER/RULE would
//	a write (UPDATE, DELETE, INSERT, REPLACE,       the catalogs hold the guards' functions, triggers and   —
//	  MERGE, COPY … FROM, TRUNCATE, LOAD DATA,       the fencing columns' NOT NULL: a write there changes
//	  also inside WITH) to a system catalog:         or disables them without naming them
//	  PostgreSQL pg_catalog.*, pg_toast.*,
//	  information_schema.*, any unqualified pg_*
//	  relation; MySQL/MariaDB the mysql,
//	  information_schema, performance_schema and
//	  sys databases (also ALTER/DROP/RENAME of
//	  their tables, USE of them)
//	CREATE/ALTER/DROP EXTENSION (every form),      an extension installs code that changes tables          —
//	  CREATE/ALTER/DROP LANGUAGE, DROP TYPE/DOMAIN/   without triggers (pg_surgery) or owns the guards'
//	  FUNCTION/… … CASCADE (not TABLE/VIEW/INDEX/     language; CASCADE and ALTER TYPE change or drop a
//	  SEQUENCE), ALTER TYPE … RENAME VALUE/DROP/      guarded table's column; a user operator or cast is
//	  ALTER ATTRIBUTE, ALTER DOMAIN … DROP,           resolved in place of pg_catalog's in the fencing
//	  CREATE/ALTER OPERATOR [CLASS|FAMILY], CREATE    comparisons; a search_path default reaches every
//	  CAST, ALTER DATABASE/ROLE/USER/SYSTEM … SET     later session; plugins and libraries are server code
//	  search_path, INSTALL/UNINSTALL (MariaDB),
//	  LOAD 'library' (PostgreSQL)
//	GRANT/REVOKE … ON ALL TABLES/SEQUENCES/        they hand out (or take away) the guard objects'          name the objects
//	  FUNCTIONS/PROCEDURES/ROUTINES IN SCHEMA,       privileges without naming them: another role could
//	  ALTER DEFAULT PRIVILEGES, MySQL ON *, *.*,     then delete the tombstones
//	  db.*
//	PostgreSQL: a statement that starts with no    pgx runs the statement prepared under a name when the   send the SQL text
//	  statement keyword (set_balance)                text equals the name: the planner would judge a name,
//	                                                 not the SQL that runs
//	a change of session_replication_role (but to   replica turns off the guard and tombstone triggers;      —
//	  origin/local), synchronous_commit to local/    the others acknowledge writes a failover forgets
//	  off, sql_log_bin = 0, skip_replication = 1,    (docs/design.md G14); writable_schema rewrites
//	  MariaDB sql_select_limit, max_join_size (but   sqlite_schema; a select limit empties the wrapper's
//	  to the maximum), sql_big_selects = 0,          own checks (every later write on the connection fails).
//	  SQLite PRAGMA writable_schema: by SET [LOCAL|  A value that is not a literal (a
//	  SESSION], SET @@[session.]x, ALTER DATABASE/   placeholder, DEFAULT, an expression) is refused, and
//	  ROLE/USER/SYSTEM/FUNCTION … SET/RESET,         so is set_config with a name that is not a string
//	  CREATE FUNCTION … SET, RESET, set_config,      literal
//	  a write to pg_settings, a body or string
//	  naming one, an executable comment
//	multi-statement strings naming one             each statement would need its own plan                  one per Exec
//	MySQL executable comments naming one or        the server runs their content                            —
//	  holding a write
//	a text whose executable comments, in any       each reading (/*!…*/ run; /*!NNNNN…*/, /*M!…*/ run or    as written out
//	  reading the server may take, would be          skipped; hints never) passes the whole rewriter only
//	  refused written out (dynamic SQL, text-level   if it would pass written out, and plans what the text
//	  transaction control, …), plans another          plans
//	  write, or cannot be classified
//	CREATE [OR REPLACE]/ALTER of a function,       its body runs SQL the wrapper never sees: escapes        WithDDL(true)
//	  procedure, trigger, rule, event or package     (E'…', U&"…"), EXECUTE 'acc' || 'ounts', or code made    (fenced_allow=ddl);
//	  (whatever its body names; also in CREATE       elsewhere can write a guarded table unseen               run it plainly
//	  SCHEMA, DEFINER forms, SQLite TEMP triggers)
//	MySQL multi-table UPDATE/DELETE, DELETE …      a join target the rewrite cannot isolate                 —
//	  USING, a DELETE under WITH, INSERT … SELECT,
//	  INSERT without a column list
//	UPDATE/INSERT IGNORE, SQLite OR REPLACE/       they turn the fencing error into a warning or a         —
//	  IGNORE/FAIL                                    different action
//	row assignments naming the token or version    the other columns cannot be kept apart                   assign them singly
//	DELETE (and a claimed FOR UPDATE) sent as two  it selects its rows twice; these could find others      a stable condition,
//	  statements (SQLite's DELETE, a DELETE the      the second time (the one-statement DELETE and         the database-side
//	  guard does not take in one, ExpectVersion,     PostgreSQL's one-statement claim select once, and     guard (one statement)
//	  MySQL/MariaDB's claim, PostgreSQL's claim      run; an OFFSET is refused in every form)
//	  with ORDER BY/LIMIT/OFFSET/NOWAIT) selecting
//	  by the fencing columns, ctid/xmin/xmax,
//	  random()/rand()/clock_timestamp()/SYSDATE()…,
//	  the statement clock (MySQL NOW(), SQLite 'now'),
//	  a LIMITed subquery over the same table;
//	  DELETE … OFFSET; MySQL/MariaDB DELETE …
//	  ORDER BY … LIMIT
//	DELETE … RETURNING outside a transaction,      the fencing UPDATE and the DELETE must commit           BeginTx, or the
//	  sent as two statements (as above)              together                                                guard (one statement)
//	FOR UPDATE with a token over a join, GROUP BY,  the claim cannot lock exactly the rows the read does    lock one table
//	  SKIP LOCKED, MySQL NOWAIT or OFFSET
//	FOR UPDATE with a token outside a transaction  claim and read must commit together; the lock       BeginTx
//	                                                 would end with the statement
//	MySQL/MariaDB FOR UPDATE with a token, with a  the read is restricted to the rows the claim      a primary key;
//	  LIMIT or NOW() in its WHERE/ORDER BY, of a     stamped, recorded by their key's text in session   values as arguments
//	  table without a primary key or with a          variables (a FLOAT's text is not exact)
//	  FLOAT/DOUBLE one; any naming a user variable
//	any other statement whose write keyword, after  a shape the planners do not know (INSERT INTO      —
//	  its modifiers (INTO, OR …, ONLY, IGNORE …),    INTO t): the backstop refuses what it cannot read
//	  names a guarded table
//
// What it cannot see at all: a stored function whose body writes a guarded table,
// reached without CALL and without naming the table (SELECT f(), f() in VALUES, a
// WHERE or another table's INSERT, SET @x = f(); on PostgreSQL also a view, a column
// DEFAULT or CHECK, a domain, an operator or attribute notation that calls it); a
// trigger or rule on another table that writes it; a user function in a
// two-statement DELETE's or claim's condition that reads the clock or anything else
// that changes between the statements (the count check refuses the result only when
// the counts differ; install the guard for the one-statement DELETE); writers on
// other connections. The functions, triggers and rules that write the table are doors
// the lazy check finds in the catalog before the pool's first guarded write to it (a
// "routine" door for a function: a body that writes and names the table, by a word
// test): while one exists, those writes are refused with ErrSchema, and schema.Check
// reports it; a pool that never writes the table runs no check. The dialects'
// database-side guards (schema.Check, fencedsql-schema) do not stop such a body: they
// refuse only an UPDATE that lowers the token or does not advance the version (and, on
// PostgreSQL, a DELETE that did not go through the fencing UPDATE), so a write that
// advances the version, an INSERT, or on MySQL/MariaDB a DELETE gets through them, from
// a routine, a trigger or another connection alike.
//
// Deleted rows stay deleted (docs/design.md, G9) only with the tombstone guard: the
// dialects' dialect.Tombstoner triggers record the deleter's token per primary key on DELETE, in
// a tombstone table per guarded table keyed by the primary key's own types and
// collations, and refuse (as ErrFenced) an INSERT, upsert or key-changing UPDATE onto
// that key with an older token — checked after the database waited for a concurrent
// DELETE of the key — for writers through the wrapper and outside it. schema.Check reports and fixes it,
// schema.PurgeTombstones bounds it (a holder paused longer than the retention could resurrect
// a row); the wrapper does not require it. Soft deletes need none: the row stays and is
// fenced like any other.
// Writers outside the wrapper are not seen by it: install the dialects' database-side
// guards for those (dialect.Guarder; triggers that refuse an UPDATE lowering the token or not
// advancing the version, and on PostgreSQL a DELETE that did not go through the fencing
// UPDATE). schema.Check reports, per guarded table, missing columns, nullability and a
// missing guard with the DDL that fixes each, and the command
//
//	go run github.com/fencedsql/fencedsql/fencedsql/cmd/fencedsql-schema -driver postgres -dsn … -tables accounts [-apply]
//
// prints or applies it. Install guards through a plain (not fenced) connection.
//
// # Lexing
//
// Statements are tokenized by a small dialect-aware lexer (quoted identifiers, string
// literals with doubled quotes and MySQL backslash escapes, PostgreSQL dollar-quoted
// strings and E'…' strings, nested comments, placeholders) and the fencing text is
// spliced in at byte offsets: the user's SQL — comments, hints, placeholders — is never
// re-emitted from an AST. A statement whose text does not contain a guarded table's name is passed through
// byte-identical without being tokenized; every other result is cached per SQL text in
// a bounded cache. Positional "?" placeholders get the token argument inserted at the
// right index; PostgreSQL's $n get $N+1.
//
// # Binding
//
// BeginTx with a context from WithLease or WithToken binds the transaction to that
// token; statements outside a transaction take the token from their own context. A
// transaction bound with WithLease whose lease is lost before Commit is rolled back and
// Commit returns an error wrapping lockclient.ErrLeaseLost — defence in depth; the
// token check in the database is the safety mechanism. Work under several locks (a
// transfer between two accounts) binds them all with WithLeases: the largest token,
// and every statement and Commit refused once any of the leases is lost; leases that
// name two lock services (lockclient.ServiceIdentifier) are refused with
// ErrLeaseServicesDiffer, nothing sent, since tokens of two services do not compare. A lock taken
// during a bound transaction joins it when a statement carries it (WithLease on the
// statement's context): the lease is checked from then on and the transaction carries
// the larger token. A statement whose context binds a bare token (WithToken) other than
// the transaction's is refused with ErrUnsupported: database/sql sends a *sql.Conn's own
// statements and its Tx's through one connection, and it would be written under the
// transaction's token. A second BeginTx on a connection with an open transaction is
// refused too. (A *sql.Conn statement with no binding at all while its Tx is open cannot
// be told from the Tx's own and takes the transaction's token: do not run statements on
// a *sql.Conn while its Tx is open; fencedpgx refuses a Conn's statements then.)
//
// # Commit outcomes
//
// Every error of Tx.Commit, and the errors of a guarded write outside a transaction
// (the wrapper's own transaction around a fenced DELETE included) that it can judge,
// wrap ErrNotCommitted or ErrCommitUnknown — but for a write's server error the wrapper
// does not type itself (a foreign key, a CHECK constraint), which is returned as the
// driver returned it (*pgconn.PgError, *mysql.MySQLError), so that type assertions and
// ORMs' error translators see the same error in autocommit as in a transaction.
// CommitOutcome classifies any error, those included:
//
//	error                                               outcome        retry
//	--------------------------------------------------  -------------  --------------------------
//	nil                                                 Committed      —
//	lockclient.ErrLeaseLost (refused before sending)    NotCommitted   under a new lease
//	ErrFenced, ErrVersionConflict, ErrDuplicate,        NotCommitted   after re-reading (fenced:
//	  ErrGuard, ErrNoToken, ErrUnsupported, ErrSchema                    stop, a newer holder owns it)
//	a server error on a statement or on COMMIT          NotCommitted   yes
//	  (PostgreSQL SQLSTATE outside 08/57/58/XX; MySQL
//	  error packets but shutdown, killed, interrupted
//	  and packet errors)
//	any error of the wrapper's own transaction around   NotCommitted   yes
//	  a fenced DELETE before its COMMIT was sent
//	COMMIT answered by ROLLBACK (PostgreSQL: a failed   NotCommitted   yes
//	  transaction; pgx "commit unexpectedly resulted
//	  in rollback")
//	sql.ErrTxDone: the Tx was already done (its         Unknown        only after checking
//	  context ended, or an earlier Commit committed or
//	  its outcome was Unknown: database/sql cannot say
//	  which)
//	the connection lost or the context ended while      Unknown        only after checking
//	  COMMIT or the write was in flight: driver.ErrBad-
//	  Conn, io.EOF, net errors, "conn closed", context
//	  errors, SQLSTATE 08/57/58/XX
//	a dynamic statement (WithDynamicSQL: CALL, EXECUTE  Unknown        only after checking
//	  IMMEDIATE, …) left the transaction (MySQL/MariaDB:
//	  it committed, or the server rolled back); Commit
//	  and Rollback send only a ROLLBACK
//	anything else                                       Unknown        only after checking
//
// One exception to the own transaction's row: when the wrapped driver answers
// driver.ErrBadConn (pgx does once a cancelled context closed its connection),
// database/sql runs the statement again on another connection and returns that
// attempt's error — for an ended context its own context.Canceled, which says Unknown.
//
// Unknown means the work may have committed: cut connections in fault tests showed such
// commits had in fact committed. The recipe: give each unit of work a request id and
// write it, in the same transaction, to a table with a unique key on it (a ledger
// row). After an Unknown outcome, look the id up (a new connection, a new lease): if
// it is there the work committed; if not, retry it — a retry that races a late commit
// fails on the unique key with ErrDuplicate (NotCommitted), never applies twice.
//
// # Wrapping any driver
//
// Register, Wrap and OpenDB wrap any driver.Driver or driver.Connector; every optional
// database/sql/driver interface the wrapped connection implements is forwarded. Over
// go-sqlmock (see DSNConnector) a unit test sees exactly the rewritten SQL and
// arguments.
package fencedsql

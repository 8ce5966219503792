package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/fencedsql/fencedsql/lockclient"
)

// A lease table that is missing (CreateTable never ran) or incomplete is a configuration
// error, not unavailability: no retry fixes it.

// ErrSchema is wrapped by the error of a backend whose lease table, or an object next to
// it, does not exist: CreateTable (or the statements of DDL) was not run on that
// database. It is also wrapped when the token source or the lease table exists but
// would not keep tokens in grant order or across a crash restart or failover, or the
// token source is exhausted (SchemaError.Unsafe). Such an error is a *SchemaError and
// also wraps lockclient.ErrInvalidConfig, never lockclient.ErrUnavailable: Acquire and
// TryAcquire return it at once instead of retrying until their deadline.
var ErrSchema = errors.New("sqllock: lease table missing or incomplete")

// SchemaError reports a lease table that does not exist or lacks objects that DDL
// creates (or, on MySQL, the row of its token counter), or whose token sequence would not
// keep tokens in grant order (Unsafe). It wraps ErrSchema, lockclient.ErrInvalidConfig
// and the database's error, if any. Its text names the table and the fix:
// sqllock.CreateTable, or sqllock.DDL for migrations; for a lost token source also that
// the floor must be raised after CreateTable re-created it.
type SchemaError struct {
	Table   string  // the lease table, as given to WithTable
	Dialect Dialect // the backend's dialect
	// Missing says what does not exist: "the lease table", or the objects of a schema
	// version ("the waiter queue (schema version 2): ..."), or "the row of the token
	// counter ..." (MySQL), or "an object" when only the database's error says which.
	Missing string
	// Outdated is true when only the objects of schema version 2 are missing: the table
	// was created by an earlier release. Acquire still works then (without a queue, see
	// the package doc); only Backend.CheckTable reports it.
	Outdated bool
	// Unsafe, when not empty, says what is wrong with an object that exists (Missing is
	// then empty) and how to fix it: a PostgreSQL token sequence with CACHE above 1,
	// CYCLE or an INCREMENT that is not positive, which would not keep tokens in grant
	// order; a PostgreSQL token sequence or lease table that is UNLOGGED or temporary,
	// or a MySQL/MariaDB lease, counter or waiter table that is not InnoDB, which would
	// forget tokens and holders at a crash restart or failover; a token source at or
	// near its end (a sequence's MAXVALUE, the BIGINT counter), where every grant fails.
	// CreateTable does not change an existing object, so it does not fix it.
	Unsafe string
	Err    error // the database's answer, nil when a catalog query found the gap
}

func (e *SchemaError) Error() string {
	var b strings.Builder
	if e.Unsafe != "" {
		fmt.Fprintf(&b, "sqllock: lease table %q is unsafe: %s", e.Table, e.Unsafe)
		if e.Err != nil {
			fmt.Fprintf(&b, " (%v)", e.Err)
		}
		return b.String()
	}
	verb := "create it"
	if e.Missing == "the lease table" {
		fmt.Fprintf(&b, "sqllock: lease table %q does not exist", e.Table)
	} else {
		fmt.Fprintf(&b, "sqllock: lease table %q is incomplete: missing %s", e.Table, e.Missing)
		verb = "create the missing objects"
		if e.Outdated {
			verb = "upgrade it"
		}
	}
	if e.Err != nil {
		fmt.Fprintf(&b, " (%v)", e.Err)
	}
	if e.tokenSourceLost() {
		fmt.Fprintf(&b, "; the lease table's token source was lost: create it again with sqllock.CreateTable(ctx, db, sqllock.%s, %q), "+
			"which starts it at the highest token the lease table holds, then, before the application writes, raise the floor "+
			"(Backend.RaiseFloor, lockfloor -raise) above the highest token the guarded tables hold (fencedsql-schema -max-token): "+
			"tokens of grants released since the loss are not in the lease table",
			dialectIdent(e.Dialect), e.Table)
		return b.String()
	}
	fmt.Fprintf(&b, "; %s with sqllock.CreateTable(ctx, db, sqllock.%s, %q) before the first Acquire, or apply the statements of sqllock.DDL in your migrations",
		verb, dialectIdent(e.Dialect), e.Table)
	return b.String()
}

// tokenSourceLost reports whether what is missing, by Missing or the database's error,
// is the token source of an existing lease table: the PostgreSQL sequence
// <table>_token_seq, or the MySQL counter table <table>_token or its row.
func (e *SchemaError) tokenSourceLost() bool {
	if e.Missing == "the lease table" {
		return false
	}
	tn, err := parseTable(e.Table)
	if err != nil {
		return false
	}
	name := tn.name + "_token_seq"
	if e.Dialect == MySQL {
		name = tn.name + "_token"
	}
	return strings.Contains(e.Missing, name) || e.Err != nil && strings.Contains(e.Err.Error(), name)
}

// Unwrap returns ErrSchema, lockclient.ErrInvalidConfig and the database's error.
func (e *SchemaError) Unwrap() []error {
	errs := []error{ErrSchema, lockclient.ErrInvalidConfig}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

func dialectIdent(d Dialect) string {
	if d == MySQL {
		return "MySQL"
	}
	return "Postgres"
}

// missingObject reports whether err is the database saying that a table, sequence,
// routine, schema or database does not exist: PostgreSQL undefined_table (42P01),
// undefined_function (42883), invalid_schema_name (3F000); MySQL ER_NO_SUCH_TABLE (1146),
// ER_SP_DOES_NOT_EXIST (1305), ER_BAD_DB_ERROR (1049). The statement then did nothing.
func missingObject(err error) bool {
	if err == nil {
		return false
	}
	if state, ok := pgState(err); ok {
		return state == "42P01" || state == "42883" || state == "3F000"
	}
	return isMySQLErr(err, 1146, 1305, 1049)
}

// schemaError is the *SchemaError for err, a missing-object error of a statement.
func (b *Backend) schemaError(missing string, err error) *SchemaError {
	return &SchemaError{Table: b.table.String(), Dialect: b.dialect, Missing: missing, Err: err}
}

// probeTable asks whether the lease table exists: nil if it does, a *SchemaError if it
// does not, another error (the database could not answer) otherwise.
func (b *Backend) probeTable(ctx context.Context) error {
	q := "SELECT 1 FROM " + b.table.quoted(b.dialect) + " WHERE 1 = 0"
	if h := statementHook.Load(); h != nil {
		(*h)(q, nil)
	}
	rows, err := b.db.QueryContext(ctx, q)
	if err == nil {
		err = rows.Close()
	}
	switch {
	case err == nil:
		return nil
	case missingObject(err):
		return b.schemaError("the lease table", err)
	}
	return err
}

// CheckTable checks, without changing anything, that the lease table and every object
// DDL creates next to it exist, so that a missing CreateTable is found at start-up
// rather than at the first Acquire. It returns nil if they all exist; a *SchemaError
// (errors.Is ErrSchema and lockclient.ErrInvalidConfig) naming what is missing,
// with Outdated set when only the objects of schema version 2 are (the table was created
// by an earlier release: Acquire still works, without a queue) or, on MySQL, when a
// grant, renewal or release procedure is an earlier revision or, for the last two,
// missing (CreateTable replaces or adds it; until then renewals and releases are the
// plain statements of the earlier release); a *SchemaError with
// Unsafe set when the PostgreSQL token sequence has CACHE above 1, CYCLE or an INCREMENT
// that is not positive (it would not keep tokens in grant order across connections), or
// fewer than a million values left before its MAXVALUE, or when the sequence or the
// lease table is UNLOGGED or temporary, or a MySQL/MariaDB lease, counter or waiter table
// is not InnoDB (tokens and holders lost at a crash restart or failover) — the first
// grant of a Backend (and on PostgreSQL its floor operations) refuses these too; a
// *SchemaError when the MySQL token counter has no row; or an
// error wrapping lockclient.ErrUnavailable when the database could not answer. It reads the catalog:
// PostgreSQL to_regclass/to_regproc (by the session's search_path for an unqualified
// table), MySQL information_schema (in the current database for an unqualified table).
//
// Acquire and TryAcquire find a missing lease table by themselves (a *SchemaError, at
// once, never retried), so calling CheckTable is optional.
func (b *Backend) CheckTable(ctx context.Context) error {
	v1, v2 := b.objects()
	missing, err := b.missingObjects(ctx, append(append([]schemaObject{}, v1...), v2...))
	if err != nil {
		return unavailable("check table", "", err)
	}
	if len(missing) == 0 {
		// CreateTable keeps an existing token source and lease table (IF NOT EXISTS),
		// whose settings are read here: the PostgreSQL sequence's and the tables'
		// persistence, the MySQL tables' engine.
		var se *SchemaError
		switch err := b.checkTokenSeq(ctx); {
		case errors.Is(err, errNoTokenSeq): // dropped since the catalog query
			if b.dialect == MySQL {
				return b.schemaError("objects table "+b.table.with("_token").String(), nil)
			}
			return b.schemaError("objects sequence "+b.table.with("_token_seq").String(), nil)
		case errors.As(err, &se):
			return err
		case err != nil:
			return unavailable("check table", "", err)
		}
		b.seqChecked.Store(true)
		if b.dialect != MySQL {
			return b.checkPGFunctions(ctx)
		}
		// The counter row, without which every grant fails.
		var v int64
		switch err := b.db.QueryRowContext(ctx, myAsOfNow+"SELECT v FROM "+b.table.with("_token").quoted(MySQL)+" WHERE id = 1").Scan(&v); {
		case errors.Is(err, sql.ErrNoRows):
			return b.schemaError(b.counterRowMissing(), nil)
		case missingObject(err):
			return b.schemaError("objects table "+b.table.with("_token").String(), err)
		case err != nil:
			return unavailable("check table", "", err)
		}
		outdated, err := myOutdatedProcs(ctx, b.db, b.table)
		switch {
		case err != nil:
			return unavailable("check table", "", err)
		case len(outdated) == 0:
			return nil
		}
		var names []string
		for _, p := range outdated {
			names = append(names, b.table.with(p.suffix).String()+" ("+p.why+")")
		}
		e := b.schemaError("the current revision of procedure "+strings.Join(names, ", "), nil)
		e.Outdated = true
		return e
	}
	if missing[0] == (schemaObject{"table", b.table}) {
		return b.schemaError("the lease table", nil)
	}
	var names []string
	outdated := true
	for _, m := range missing {
		names = append(names, m.kind+" "+m.name.String())
		outdated = outdated && contains(v2, m)
	}
	what := "objects"
	if outdated {
		what = "the waiter queue (schema version 2):"
	}
	e := b.schemaError(what+" "+strings.Join(names, ", "), nil)
	e.Outdated = outdated
	return e
}

func contains(list []schemaObject, o schemaObject) bool {
	for _, x := range list {
		if x == o {
			return true
		}
	}
	return false
}

type schemaObject struct {
	kind string // "table", "sequence", "function" or "procedure"
	name tableName
}

// objects lists what DDL creates, by schema version; the lease table comes first.
func (b *Backend) objects() (v1, v2 []schemaObject) {
	t := b.table
	o := func(kind, suffix string) schemaObject { return schemaObject{kind, t.with(suffix)} }
	if b.dialect == Postgres {
		v1 = []schemaObject{{"table", t}, o("sequence", "_token_seq")}
		v2 = []schemaObject{o("table", "_waiters"), o("sequence", "_ticket_seq"), o("function", "_grant_v2"),
			o("function", "_release_v2"), o("function", "_leave_v2"), o("function", "_abandon_v2"), o("function", "_wake_v2")}
		return v1, v2
	}
	v1 = []schemaObject{{"table", t}, o("table", "_token"), o("procedure", "_grant_v1")}
	v2 = []schemaObject{o("table", "_waiters"), o("procedure", "_grant_v2")}
	return v1, v2
}

// missingObjects returns the objects of list that the catalog does not have, in order.
func (b *Backend) missingObjects(ctx context.Context, list []schemaObject) ([]schemaObject, error) {
	found := make([]bool, len(list))
	if b.dialect == Postgres {
		cols := make([]string, len(list))
		args := make([]any, len(list))
		dest := make([]any, len(list))
		for i, o := range list {
			fn := "to_regclass"
			if o.kind == "function" {
				fn = "to_regproc"
			}
			cols[i] = fmt.Sprintf("%s($%d::text) IS NOT NULL", fn, i+1)
			args[i] = o.name.quoted(Postgres)
			dest[i] = &found[i]
		}
		if err := b.db.QueryRowContext(ctx, "SELECT "+strings.Join(cols, ", "), args...).Scan(dest...); err != nil {
			return nil, err
		}
	} else {
		var schema sql.NullString
		if b.table.schema != "" {
			schema = sql.NullString{String: b.table.schema, Valid: true}
		}
		have := map[string]bool{}
		for _, kind := range []string{"table", "procedure"} {
			args := []any{schema}
			var marks []string
			for _, o := range list {
				if o.kind == kind {
					args = append(args, o.name.name)
					marks = append(marks, "?")
				}
			}
			if len(marks) == 0 {
				continue
			}
			q := "SELECT table_name FROM information_schema.tables WHERE table_schema = COALESCE(?, DATABASE()) AND table_name IN ("
			if kind == "procedure" {
				q = "SELECT routine_name FROM information_schema.routines WHERE routine_schema = COALESCE(?, DATABASE()) AND routine_type = 'PROCEDURE' AND routine_name IN ("
			}
			rows, err := b.db.QueryContext(ctx, q+strings.Join(marks, ", ")+")", args...)
			if err != nil {
				return nil, err
			}
			for rows.Next() {
				var n string
				if err := rows.Scan(&n); err != nil {
					rows.Close()
					return nil, err
				}
				have[kind+" "+strings.ToLower(n)] = true
			}
			if err := rows.Close(); err != nil {
				return nil, err
			}
			if err := rows.Err(); err != nil {
				return nil, err
			}
		}
		for i, o := range list {
			found[i] = have[o.kind+" "+strings.ToLower(o.name.name)]
		}
	}
	var missing []schemaObject
	for i, o := range list {
		if !found[i] {
			missing = append(missing, o)
		}
	}
	return missing, nil
}

// pgCurrentMark is in the body of every current PostgreSQL function of the lease table:
// functions of an earlier release call clock_timestamp() (and the other built-ins)
// unqualified, resolved by the caller's search_path (red-team rt41c F2). CreateTable
// replaces them (CREATE OR REPLACE FUNCTION).
const pgCurrentMark = pgClock

// checkPGFunctions reports, as an Outdated *SchemaError, the version-2 functions whose
// body is not the current one (pgCurrentMark missing).
func (b *Backend) checkPGFunctions(ctx context.Context) error {
	_, v2 := b.objects()
	var names []string
	for _, o := range v2 {
		if o.kind != "function" {
			continue
		}
		var current bool
		err := b.db.QueryRowContext(ctx, "SELECT pg_catalog.strpos(p.prosrc, $2::text) > 0 FROM pg_catalog.pg_proc p "+
			"WHERE p.oid = pg_catalog.to_regproc($1::text)", o.name.quoted(Postgres), pgCurrentMark).Scan(&current)
		switch {
		case errors.Is(err, sql.ErrNoRows): // dropped since the catalog query
			current = false
		case err != nil:
			return unavailable("check table", "", err)
		}
		if !current {
			names = append(names, o.name.String())
		}
	}
	if len(names) == 0 {
		return nil
	}
	e := b.schemaError("the current revision of function "+strings.Join(names, ", ")+
		" (an earlier one resolves clock_timestamp() by the caller's search_path)", nil)
	e.Outdated = true
	return e
}

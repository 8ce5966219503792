package postgres

import (
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The one-statement fenced DELETE (dialect.DeleteFencer). With the guard installed,
// the wrapper sends a fenced DELETE whose condition is plain (no subquery, no call but
// of built-in scalar functions, built-in operators and casts only: the planner's
// plainCondition) as the caller's DELETE with two more conditions, and any other as
// the fencing UPDATE and the DELETE:
//
//	DELETE FROM t WHERE (<condition>)
//	  AND "<schema>"."fencedsql_fence_<table>"("fence_token"::pg_catalog.int8, $n::pg_catalog.int8) IS NOT NULL
//	  AND (SELECT pg_catalog.set_config('fencedsql_guard.delete_token', $n::pg_catalog.int8::pg_catalog.text, true)
//	           || pg_catalog.set_config('fencedsql_guard.delete_statement',
//	                pg_catalog.concat('<table>'::pg_catalog.regclass::pg_catalog.oid, '/', pg_catalog.statement_timestamp()), true)
//	       WHERE "<schema>"."fencedsql_fence_<table>"($n::pg_catalog.int8, $n::pg_catalog.int8) IS NOT NULL) IS NOT NULL
//
// One round trip, and nothing else in the statement.
//
//   - The fence is the first call. fencedsql_fence_<table>(cur, tok) is a SQL function
//     PostgreSQL inlines into the statement: an expression that is 1 when the row was
//     written under tok and tok is at or above the floor's copy (FloorSQLState), and
//     otherwise calls fencedsql_fenced_<table>(cur, tok), which raises
//     not_null_violation with COLUMN set to the token column — the wrapper's ErrFenced —
//     when the row's token cur is newer than tok or NULL, and the floor's error when
//     tok is below the token floor. The error aborts the whole statement: nothing is
//     deleted. It holds with the triggers disabled (it is not a trigger), and PostgreSQL
//     evaluates it again on the newest version of a row a concurrent transaction
//     changed (EvalPlanQual). Both functions are created by GuardDDL beside the guard's
//     trigger function and dropped by UnguardDDL; they name every operator, function and
//     relation with its schema instead of pinning search_path (a pinned search_path
//     would also stop the inlining).
//   - The mark is the second: an uncorrelated subquery, so PostgreSQL runs it once per
//     statement (an InitPlan, as a one-time filter before the scan starts, so before
//     any code the condition calls), that calls the fence function on the token itself
//     (the floor's check: a token below the floor fails the statement there, whatever
//     the condition selects) and sets two transaction-local settings:
//     deleteTokenSetting to the token, deleteStmtSetting to the table's oid and the
//     statement's start time (markedStatement). The row guard's DELETE trigger
//     (fencedsql_guard_delete, AFTER DELETE) fires unless the mark is this statement's,
//     names the trigger's table (a regclass constant in the trigger's WHEN clause, which
//     partitions inherit) and a token at or above the deleted row's (guardDeleteWhen):
//     so the wrapper's rows pay no trigger call, and any other row deleted inside the
//     statement — by a cascade, by a user's trigger, by a function or operator the
//     condition resolves to user code — is judged by the fence's rule: a row of another
//     table, or of a newer token, reaches the guard function and is refused unless this
//     transaction fenced it first. A deletion in a later statement of the transaction
//     finds a mark of another statement and is judged row by row (a red-team pass
//     showed why the mark must not outlive its statement: a floor raised, or a lease
//     lost, between the statements would not be seen).
//   - The tombstone trigger records the greater of the row's token and the mark's when
//     the mark names its table or an ancestor of it (a partition, an inheritance
//     child), as it records the token the fencing UPDATE stamped in the two-statement
//     form. It compares no time: a statement's start time as text depends on the
//     session's TimeZone, which a user's trigger may change in the middle of the
//     statement (a red-team pass: the tombstone then missed a mark the guard had
//     accepted, and recorded the row's older token). A mark of an earlier statement of
//     the transaction can only raise what it records (a refusal, never a write).
//   - Why a condition and only under a plain one: a RETURNING list would be evaluated
//     for exactly the rows deleted, but costs the statement its result rows (about 8 µs
//     on loopback), and a condition is exact only where it judges only the rows
//     deleted: a subquery can become a semi-join below which the table's own
//     conditions are pushed (the fence would judge every row of the table and refuse
//     the DELETE for a row it does not delete).
//   - Order: PostgreSQL evaluates the parts of a WHERE condition cheapest first, by
//     their declared cost. fencedsql_fenced_<table> is declared COST 1000, so the fence
//     comes after every part of a plain condition (built-in operators and functions
//     cost 1; an operator whose function a user declared more expensive than 1000
//     would be evaluated after the fence: a row that the rest of the condition selects
//     and that operator does not, carrying a newer token, would then fail the DELETE
//     with ErrFenced, nothing deleted — a refusal, never a write).
//   - DeleteFenceQuery says yes when both functions exist in this version in the
//     table's schema, the session's role may call them, the row guard is of the
//     version whose DELETE trigger reads this mark and the tombstone function (if any)
//     of the one that reads it; otherwise the wrapper sends the two statements.
//
// Like the rest of the guard, this is a protocol, not a secret: a client outside the
// wrapper that sets the mark itself can DELETE past the row guard (rows at or below
// the token it claims); it still cannot resurrect a key under an older token (the
// tombstone records at least the row's token). Through the wrapper no statement can:
// the planner refuses set_config of a name with the reserved prefix.
const (
	// oneStepMarker is in the body of the guard function (its DELETE trigger reads
	// the mark) and of the two fence functions of this version of the one-statement
	// DELETE.
	oneStepMarker = "fencedsql one-statement delete v5"
	// oneStepMarkerBefore is the previous version's marker (v4: the slow fence and the
	// guard's floor slow path took READ UNCOMMITTED for a snapshot level, red-team
	// rt58b F2), which guard v7's text names.
	oneStepMarkerBefore = "fencedsql one-statement delete v4"
	// markMarker is in the body of every function that reads the mark as this version
	// writes it: the tombstone function. (Older versions marked their functions
	// "fencedsql one-statement delete v1"/"v2" and "fencedsql delete mark v2", and
	// their row guard accepted a DELETE by its text: an older wrapper, seeing functions
	// of this version without its marker, sends the two statements.)
	markMarker = "fencedsql delete mark v3"
	// deleteTokenSetting and deleteStmtSetting are the transaction-local settings
	// that carry the mark: the token, and the table and statement it was set for
	// (markedStatement). Two settings, so that the row guard's WHEN clause compares
	// one string and casts one number (it runs for every row deleted).
	deleteTokenSetting = "fencedsql_guard.delete_token"
	deleteStmtSetting  = "fencedsql_guard.delete_statement"
	// fencePrefix starts the name of every fence function the statement calls.
	fencePrefix = "fencedsql_fence_"
	// fencedPrefix starts the name of the function the fence calls when its fast
	// path does not accept (a different prefix: no table's fence function shares it).
	fencedPrefix = "fencedsql_fenced_"
	// fencedCost is fencedsql_fenced_<table>'s declared cost (see Order above).
	fencedCost = "1000"
)

func fenceFunc(name string) string  { return boundedName(fencePrefix, name, maxIdentLen) }
func fencedFunc(name string) string { return boundedName(fencedPrefix, name, maxIdentLen) }

// fenceFuncName is the qualified name of table's fence function (table folded).
func fenceFuncName(table dialect.TableName) dialect.TableName {
	return dialect.TableName{Schema: table.Schema, Name: fenceFunc(table.Name)}
}

// fencedFuncName is the qualified name of the function table's fence calls off its
// fast path (table folded).
func fencedFuncName(table dialect.TableName) dialect.TableName {
	return dialect.TableName{Schema: table.Schema, Name: fencedFunc(table.Name)}
}

// fenceFuncDDL creates table's two fence functions, with the placeholders for the
// floor table, its copy and the installer's schema (GuardDDL runs each through
// withFloorTable).
func (d dialectImpl) fenceFuncDDL(table dialect.TableName, tokenCol string) []string {
	fn := fenceFuncName(table).Quote(d.QuoteIdent)
	fenced := fencedFuncName(table)
	slow := fenced.Quote(d.QuoteIdent)
	if fenced.Schema == "" {
		// The fence's body is parsed where it is inlined, under the caller's
		// search_path: it names the function in the installer's schema, where
		// CREATE FUNCTION put it.
		slow = schemaPlaceholder + "." + d.QuoteIdent(fenced.Name)
	}
	name := pgLiteral(table.String())
	body := `
-- ` + oneStepMarker + `
DECLARE
  fl bigint;
BEGIN
  -- The fence's fast path did not accept (a row of an older token, a NULL, tok below
  -- the floor's copy or the copy unreadable). First the row of an older token, at or
  -- above the copy, in one expression.
  IF cur` + op("<") + `tok AND tok` + op(">=") + floorCopy + ` THEN
    RETURN 1;
  END IF;
  IF cur IS NULL OR cur` + op(">") + `tok THEN
    RAISE EXCEPTION USING ERRCODE = 'not_null_violation', COLUMN = ` + pgLiteral(tokenCol) + `, TABLE = ` + pgLiteral(table.Name) + `,
      MESSAGE = pg_catalog.format('fencedsql: fence on %s: DELETE under token %s of a row written under token %s (null value in column %I violates the fence)', ` + name + `, tok, cur, ` + pgLiteral(tokenCol) + `),
      HINT = 'the writer holds a stale fencing token';
  END IF;
  -- Below the floor's copy, or the copy unreadable: the floor table decides.
  ` + floorSlowRead + `
  IF fl IS NULL OR tok` + op("<") + `fl THEN
    RAISE EXCEPTION USING ERRCODE = '` + FloorSQLState + `', TABLE = ` + pgLiteral(table.Name) + `,
      MESSAGE = pg_catalog.format('fencedsql: token floor on %s: token %s is below the floor %s', ` + name + `, tok, ` + floorShown + `),
      HINT = 'the lease predates a failover or a lock-service switch: acquire again; if every new lease is refused, raise the lock service''s floor';
  END IF;
  RETURN 1;
END
`
	tag := dollarTag(body)
	slowDDL := "CREATE OR REPLACE FUNCTION " + slow + "(cur bigint, tok bigint) RETURNS integer LANGUAGE plpgsql COST " + fencedCost + " AS " + tag + body + tag
	// The fast path, one expression PostgreSQL inlines: the row written under tok, tok
	// at or above the floor's copy.
	fast := `
SELECT /* ` + oneStepMarker + ` */ CASE WHEN cur` + op("=") + `tok AND tok` + op(">=") + floorCopy + ` THEN 1 ELSE ` + slow + `(cur, tok) END
`
	ftag := dollarTag(fast)
	fastDDL := "CREATE OR REPLACE FUNCTION " + fn + "(cur bigint, tok bigint) RETURNS integer LANGUAGE sql COST " + fencedCost + " AS " + ftag + fast + ftag
	return []string{slowDDL, fastDDL}
}

// DeleteFence returns the one-statement DELETE's fence and mark as one condition
// ANDed to the caller's plain one, and no check.
func (d dialectImpl) DeleteFence(table dialect.TableName, tokenCol string) (mark, check string) {
	tok := dialect.TokenSlot + "::pg_catalog.int8"
	return fenceCall(d, table, tokenCol) + " IS NOT NULL AND (SELECT pg_catalog.set_config('" + deleteTokenSetting + "', " + tok + "::pg_catalog.text, true)" +
		" OPERATOR(pg_catalog.||) pg_catalog.set_config('" + deleteStmtSetting + "', " + markedStatement(d, table) + ", true) WHERE " +
		fenceFuncName(fold(table)).Quote(d.QuoteIdent) + "(" + tok + ", " + tok + ") IS NOT NULL) IS NOT NULL", ""
}

// markedStatement is the value of deleteStmtSetting for a DELETE of table by the
// current statement: "<table's oid>/<the statement's start time as text>". The text
// depends on the session's TimeZone and DateStyle: code that changes either in the
// middle of the statement, before a row is deleted (a function the condition calls),
// makes the rows deleted after it fail the row guard's test, and the guard refuses
// them (a refusal, never a write).
func markedStatement(d dialectImpl, table dialect.TableName) string {
	return "pg_catalog.concat(" + tableOID(d, table) + ", '/', pg_catalog.statement_timestamp())"
}

// tableOID is table's oid as a constant of the statement or the trigger condition it
// is written in (a regclass literal: resolved when that text is parsed, stored as the
// oid, so a trigger's condition follows a rename and survives a dump and restore).
func tableOID(d dialectImpl, table dialect.TableName) string {
	return pgLiteral(fold(table).Quote(d.QuoteIdent)) + "::pg_catalog.regclass::pg_catalog.oid"
}

// fenceCall is the call of table's fence function on a row's token column and the
// statement's token, both cast to bigint: the call names the function schema-qualified
// and its exact argument types, so PostgreSQL takes the (bigint, bigint) function
// whatever other function of that name someone with CREATE on the schema adds (red-team
// rt57b F1: with the token an untyped parameter, an overload (bigint, double
// precision) was preferred and ran inside the statement, raising the delete mark;
// (bigint, real) made the call ambiguous, (bigint, text) typed the token text). The
// one overload an exact call cannot pass over — one whose extra parameters have
// defaults, which makes the call ambiguous (42725) — DeleteFenceQuery refuses (the
// wrapper then sends the two statements), and schema.Check reports every such
// function with a Fix that drops it (guardNamesakes).
func fenceCall(d dialectImpl, table dialect.TableName, tokenCol string) string {
	return fenceFuncName(fold(table)).Quote(d.QuoteIdent) + "(" + d.QuoteIdent(tokenCol) + "::pg_catalog.int8, " + dialect.TokenSlot + "::pg_catalog.int8)"
}

// DeleteFenceQuery yields 1 when table's fence function (resolved as the DELETE
// resolves it) and the function it calls are of this version, callable and in the
// table's own schema (a function of that name earlier on the search_path is not the
// guard's), the row guard on table (if any) is of the version that accepts a DELETE
// calling the fence function and the tombstone's DELETE trigger (if any) of one that
// reads the mark, no other function of either fence name is in that schema (an
// overload with defaulted extra parameters makes even the statement's exactly typed
// calls ambiguous: red-team rt57b F1/F2; guardNamesakes reports it), and no rule
// rewrites a DELETE of table (a DO INSTEAD rule would drop the fence's condition; the
// two-statement form's count check reports such a rule instead).
func (d dialectImpl) DeleteFenceQuery(table dialect.TableName) (query string, args []any) {
	t := fold(table)
	fn := fenceFuncName(t).Quote(d.QuoteIdent) + "(bigint,bigint)"
	return `SELECT CASE WHEN p.oid IS NOT NULL AND p.prosrc LIKE $2 AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')
  AND s.oid IS NOT NULL AND s.prosrc LIKE $2 AND pg_catalog.has_function_privilege(s.oid, 'EXECUTE') AND s.pronamespace = p.pronamespace
  AND p.pronamespace = (SELECT c.relnamespace FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($3))
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc f ON f.oid = t.tgfoid
    WHERE t.tgrelid = pg_catalog.to_regclass($3) AND (t.tgname IN ($4, $7) AND f.prosrc NOT LIKE $2 OR t.tgname = $5 AND f.prosrc NOT LIKE $6))
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_rewrite w WHERE w.ev_class = pg_catalog.to_regclass($3) AND w.ev_type = '4')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc o WHERE o.pronamespace = p.pronamespace AND o.proname IN (p.proname, $8) AND o.oid NOT IN (p.oid, s.oid))
  THEN 1 ELSE 0 END
FROM (SELECT pg_catalog.to_regprocedure($1) AS oid) r LEFT JOIN pg_catalog.pg_proc p ON p.oid = r.oid
  LEFT JOIN pg_catalog.pg_proc s ON s.pronamespace = p.pronamespace AND s.proname = $8 AND s.proargtypes = p.proargtypes`,
		[]any{fn, "%" + oneStepMarker + "%", regclass(table), guardTrigger, tombDeleteTrigger, "%" + markMarker + "%", guardDeleteTrigger, fencedFunc(t.Name)}
}

// DeleteFenceExec: pgx reads the statement to its end and reports the command tag's count.
func (dialectImpl) DeleteFenceExec() bool { return true }

var _ dialect.DeleteFencer = dialectImpl{}

package postgres

import (
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The one-statement fenced DELETE (dialect.DeleteFencer). With the guard installed,
// the wrapper sends a fenced DELETE as
//
//	DELETE FROM t WHERE (<condition>)
//	  AND pg_catalog.set_config('fencedsql_guard.delete_token', pg_catalog.concat($n::bigint, '/', pg_catalog.statement_timestamp()), true) IS NOT NULL
//	RETURNING <schema>.fencedsql_fence_<table>(fence_token, $n)
//
// instead of a fencing UPDATE and the DELETE in a transaction: one round trip.
//
//   - The fence is the RETURNING call, evaluated for every row the DELETE deletes
//     (after PostgreSQL re-checked the condition on a row a concurrent transaction
//     changed, and after its BEFORE triggers): fencedsql_fence_<table>(cur, tok) raises
//     not_null_violation with COLUMN set to the token column — the wrapper's ErrFenced —
//     when the row's token cur is newer than tok or NULL, and the floor's error
//     (FloorSQLState) when tok is below the token floor. The error aborts the whole
//     statement: nothing is deleted. The function is created by GuardDDL beside the
//     guard's trigger function and dropped by UnguardDDL; it holds with the triggers
//     disabled. It names every operator and function with its schema instead of
//     pinning search_path (which would cost every call a configuration save and
//     restore).
//   - The mark (the set_config in the condition; true for every row) tells the
//     triggers which token the statement deletes under: the token and the statement's
//     start time, transaction-local. The row guard accepts a DELETE whose statement is
//     marked (a plain DELETE is still refused), and the tombstone records the greater
//     of the row's token and the marked one, as it records the token the fencing UPDATE
//     stamped in the two-statement form. A mark left by an earlier statement of the
//     same transaction is ignored (its start time differs).
//   - DeleteFenceQuery says yes when the fence function exists in this version, the
//     session's role may call it, and the table's DELETE triggers (row guard,
//     tombstone) are of the version that reads the mark; otherwise the wrapper sends
//     the two statements.
//
// Like the rest of the guard, the mark is a protocol, not a secret: a client outside
// the wrapper that sets it can DELETE past the row guard (it still cannot resurrect a
// key under an older token: the tombstone records the marked token).
const (
	// oneStepMarker is in the body of every guard and tombstone function that reads
	// the mark, and of the fence function.
	oneStepMarker = "fencedsql one-statement delete v1"
	// deleteTokenSetting is the transaction-local setting that carries the mark.
	deleteTokenSetting = "fencedsql_guard.delete_token"
)

func fenceFunc(name string) string { return boundedName("fencedsql_fence_", name, maxIdentLen) }

// fenceFuncName is the qualified name of table's fence function (table folded).
func fenceFuncName(table dialect.TableName) dialect.TableName {
	return dialect.TableName{Schema: table.Schema, Name: fenceFunc(table.Name)}
}

// fenceFuncDDL creates table's fence function, with the placeholders for the floor
// table and its copy (GuardDDL runs it through withFloorTable).
func (d dialectImpl) fenceFuncDDL(table dialect.TableName, tokenCol string) string {
	fn := fenceFuncName(table).Quote(d.QuoteIdent)
	name := pgLiteral(table.String())
	body := `
-- ` + oneStepMarker + `
DECLARE
  fl bigint;
BEGIN
  -- The fast path, one expression: a row at or below tok, tok at or above the floor's
  -- copy (FloorSQLState). Below the copy, the floor table decides.
  IF cur` + op("<=") + `tok AND tok` + op(">=") + floorCopy + ` THEN
    RETURN 1;
  END IF;
  IF cur IS NULL OR cur` + op(">") + `tok THEN
    RAISE EXCEPTION USING ERRCODE = 'not_null_violation', COLUMN = ` + pgLiteral(tokenCol) + `, TABLE = ` + pgLiteral(table.Name) + `,
      MESSAGE = pg_catalog.format('fencedsql: fence on %s: DELETE under token %s of a row written under token %s (null value in column %I violates the fence)', ` + name + `, tok, cur, ` + pgLiteral(tokenCol) + `),
      HINT = 'the writer holds a stale fencing token';
  END IF;
  fl := (SELECT f.floor FROM ` + floorPlaceholder + ` f WHERE f.id` + op("=") + `1);
  IF tok` + op("<") + `fl THEN
    RAISE EXCEPTION USING ERRCODE = '` + FloorSQLState + `', TABLE = ` + pgLiteral(table.Name) + `,
      MESSAGE = pg_catalog.format('fencedsql: token floor on %s: token %s is below the floor %s', ` + name + `, tok, fl),
      HINT = 'the lease predates a failover or a lock-service switch: acquire again; if every new lease is refused, raise the lock service''s floor';
  END IF;
  RETURN 1;
END
`
	tag := dollarTag(body)
	return "CREATE OR REPLACE FUNCTION " + fn + "(cur bigint, tok bigint) RETURNS integer LANGUAGE plpgsql AS " + tag + body + tag
}

// DeleteFence returns the mark and the check of the one-statement DELETE of table.
func (d dialectImpl) DeleteFence(table dialect.TableName, tokenCol string) (mark, check string) {
	mark = "pg_catalog.set_config('" + deleteTokenSetting + "', pg_catalog.concat(" + dialect.TokenSlot + "::bigint, '/', pg_catalog.statement_timestamp()), true) IS NOT NULL"
	check = fenceFuncName(fold(table)).Quote(d.QuoteIdent) + "(" + d.QuoteIdent(tokenCol) + ", " + dialect.TokenSlot + ")"
	return mark, check
}

// DeleteFenceQuery yields 1 when table's fence function (resolved as the DELETE
// resolves it) is of this version, callable and in the table's own schema (a function
// of that name earlier on the search_path is not the guard's), every DELETE trigger of the guards on
// table reads the mark, and no rule rewrites a DELETE of table (PostgreSQL refuses
// RETURNING where a DO INSTEAD rule lacks it; the two-statement form's count check
// reports such a rule instead).
func (d dialectImpl) DeleteFenceQuery(table dialect.TableName) (query string, args []any) {
	fn := fenceFuncName(fold(table)).Quote(d.QuoteIdent) + "(bigint,bigint)"
	return `SELECT CASE WHEN p.oid IS NOT NULL AND p.prosrc LIKE $2 AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')
  AND p.pronamespace = (SELECT c.relnamespace FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($3))
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc f ON f.oid = t.tgfoid
    WHERE t.tgrelid = pg_catalog.to_regclass($3) AND t.tgname IN ($4, $5) AND f.prosrc NOT LIKE $2)
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_rewrite w WHERE w.ev_class = pg_catalog.to_regclass($3) AND w.ev_type = '4')
  THEN 1 ELSE 0 END
FROM (SELECT pg_catalog.to_regprocedure($1) AS oid) r LEFT JOIN pg_catalog.pg_proc p ON p.oid = r.oid`,
		[]any{fn, "%" + oneStepMarker + "%", table.String(), guardTrigger, tombDeleteTrigger}
}

// DeleteFenceExec: pgx reads the statement to its end and reports the command tag's count.
func (dialectImpl) DeleteFenceExec() bool { return true }

var _ dialect.DeleteFencer = dialectImpl{}

package postgres

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The absence recorder (dialect.AbsenceRecorder; docs/design.md G10, red-team rt42e
// F1): one function per table with tombstones, installed with the tombstone guard
// (TombstoneDDL) and dropped with it,
//
//	<schema>.fencedsql_tombclaim_<table>(<key columns' types>, bigint) RETURNS integer
//
// SECURITY DEFINER with search_path pinned to pg_catalog, pg_temp, which records "the
// key's absence claimed at the token" in the table's tombstone table: the key with the
// token, keeping the greater token of a tombstone already there (the record only ever
// raises a key's tombstone). The wrapper calls it after a token-bound claim that pins
// the table's whole primary key and found no row; the tombstone guard's INSERT check
// then refuses that key under an older token, and lets the claimer's equal token and
// newer ones through. It is dated by the server's clock, as a DELETE's tombstone, and
// purged with them (schema.PurgeTombstones). A key value the key's type cannot hold
// (too long for a varchar(n), out of a numeric's range) records nothing: no row of it
// can exist or be inserted. EXECUTE stays granted to PUBLIC (a function's default):
// every role that may claim may record, and a record refuses only tokens older than
// the one it carries, as a row written under that token would.
const (
	// absenceVersion marks the recorder's body; AbsenceRecorderQuery and
	// TombstoneInstalledQuery look for it.
	absenceVersion = "fencedsql absence recorder v1"
)

func absenceFunc(name string) string {
	return boundedName("fencedsql_tombclaim_", name, maxIdentLen)
}

func absenceFuncName(table dialect.TableName) dialect.TableName {
	return dialect.TableName{Schema: tombSchema(table), Name: absenceFunc(dialect.LowerASCII(table.Name))}
}

// absenceDDL returns the statements that (re)create table's recorder: the recorder's
// overloads of another signature are dropped first (a key whose types changed), so
// that a call by unknown-typed parameters resolves to one function.
func (d dialectImpl) absenceDDL(table dialect.TableName, key []dialect.KeyColumn, tomb string) []string {
	fn := absenceFuncName(table)
	params := make([]string, len(key))
	cols := make([]string, len(key))
	for i, k := range key {
		params[i] = k.Type
		cols[i] = d.QuoteIdent(k.Name)
	}
	body := absenceBody(tomb, strings.Join(cols, ", "), len(key))
	tag := dollarTag(body)
	return []string{
		d.dropAbsence(table),
		"CREATE OR REPLACE FUNCTION " + fn.Quote(d.QuoteIdent) + "(" + strings.Join(params, ", ") + ", bigint) RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS " + tag + body + tag,
	}
}

// absenceBody is the recorder's body for the tombstone table tomb (quoted, qualified)
// and its key columns list (quoted, separated by ", "), n of them.
func absenceBody(tomb, list string, n int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = "$" + strconv.Itoa(i+1)
	}
	return `
-- ` + absenceVersion + `
BEGIN
  INSERT INTO ` + tomb + ` AS t (` + list + `, fence_token, deleted_at)
    VALUES (` + strings.Join(vals, ", ") + `, $` + strconv.Itoa(n+1) + `, pg_catalog.clock_timestamp())
    ON CONFLICT (` + list + `) DO UPDATE
      SET fence_token = GREATEST(t.fence_token, EXCLUDED.fence_token), deleted_at = GREATEST(t.deleted_at, EXCLUDED.deleted_at);
  RETURN 1;
EXCEPTION WHEN string_data_right_truncation OR numeric_value_out_of_range THEN
  RETURN 0;
END
`
}

// absenceList matches the key column list of a recorder's body: quoted names only.
var absenceList = regexp.MustCompile(`INSERT INTO [^\n]* AS t \(((?:"(?:[^"]|"")+")(?:, "(?:[^"]|"")+")*), fence_token, deleted_at\)`)

// ownAbsence reports whether src, the body of a function named like a recorder, is
// exactly the recorder absenceDDL writes for the tombstone table tomb (quoted,
// qualified) and some key: it can only raise tombstones of tomb (the guard-writer
// check leaves it alone; any other text is judged as a user's function).
func ownAbsence(src, tomb string) bool {
	m := absenceList.FindStringSubmatch(src)
	if m == nil {
		return false
	}
	n := len(regexp.MustCompile(`"(?:[^"]|"")+"`).FindAllString(m[1], -1))
	return src == absenceBody(tomb, m[1], n)
}

// dropAbsence is the statement that drops every function named like table's recorder
// in its schema, whatever its signature.
func (d dialectImpl) dropAbsence(table dialect.TableName) string {
	fn := absenceFuncName(table)
	body := `
DECLARE
  f pg_catalog.regprocedure;
BEGIN
  FOR f IN SELECT p.oid::pg_catalog.regprocedure FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
      WHERE p.proname OPERATOR(pg_catalog.=) ` + pgLiteral(fn.Name) + ` AND n.nspname OPERATOR(pg_catalog.=) ` + pgLiteral(fn.Schema) + `
  LOOP
    EXECUTE 'DROP FUNCTION ' || f::text;
  END LOOP;
END
`
	tag := dollarTag(body)
	return "DO " + tag + body + tag
}

// AbsenceRecorderQuery yields 1 when table's recorder of this version is in table's
// schema, SECURITY DEFINER.
func (dialectImpl) AbsenceRecorderQuery(table dialect.TableName) (query string, args []any) {
	fn := absenceFuncName(table)
	return `SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
  WHERE p.proname = $1 AND n.nspname = $2 AND p.prosecdef AND pg_catalog.strpos(p.prosrc, $3) > 0) THEN 1 ELSE 0 END`,
		[]any{fn.Name, fn.Schema, absenceVersion}
}

// AbsenceRecordSQL calls table's recorder with the key's values and the token as
// parameters, typed by the function's signature (as the claim's WHERE types them by
// the key columns'), schema-qualified.
func (d dialectImpl) AbsenceRecordSQL(table dialect.TableName, keyColumns int) string {
	ps := make([]string, keyColumns+1)
	for i := range ps {
		ps[i] = "$" + strconv.Itoa(i+1)
	}
	return "SELECT " + absenceFuncName(table).Quote(d.QuoteIdent) + "(" + strings.Join(ps, ", ") + ")"
}

var _ dialect.AbsenceRecorder = dialectImpl{}

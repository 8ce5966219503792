package postgres

import (
	"strconv"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Tombstones (dialect.Tombstoner, G9 in docs/design.md: no resurrection of a deleted
// row under an older token).
//
// TombstoneDDL creates, when it is missing, the table's own tombstone table in its
// schema, keyed by the table's primary key with the same types and collations, so that
// a tombstone matches exactly the keys the table's own unique index calls equal (no
// text rendering: time zone, DateStyle, bytea_output, extra_float_digits change
// nothing):
//
//	CREATE TABLE IF NOT EXISTS <schema>.fencedsql_tomb_<table> (
//	    <pk columns, same types and collations> NOT NULL,
//	    fence_token bigint NOT NULL, deleted_at timestamptz NOT NULL DEFAULT now(),
//	    PRIMARY KEY (<pk columns>))
//
// (a key column named fence_token or deleted_at cannot be held there:
// dialect.TombstoneDDLFor refuses it first, with dialect.ErrTombstoneKeyName),
// and one trigger function per table, <schema>.fencedsql_tombstone_<table>(), with the
// key and token columns compiled in, SECURITY DEFINER (the application role needs no
// right on the tombstone table, and cannot write it) and SET search_path = pg_catalog,
// pg_temp with every table schema-qualified (a temporary table of the same name
// shadows nothing). Three row triggers call it, all ENABLE ALWAYS (they fire in every
// session_replication_role, replica included):
//
//	fencedsql_tombstone_delete  AFTER DELETE  records OLD's key and OLD.<token> (or
//	                                          the token a one-statement DELETE marked,
//	                                          if greater), keeping the greater token
//	fencedsql_tombstone_insert  AFTER INSERT  refuses NEW when the tombstone of its key
//	                                          holds a greater token than NEW.<token>
//	fencedsql_tombstone_rekey   AFTER UPDATE  WHEN the key changed: records the key the
//	                                          row left, checks the key it moved onto
//
// The checks run AFTER the row is in, that is after the INSERT waited on the unique
// index for a concurrent DELETE of the same key to end. The check first probes the
// tombstone's key with an INSERT … ON CONFLICT DO NOTHING, in every isolation level
// (v8): it waits for a transaction writing that key's tombstone — a claim of the absent
// key recording it (absence.go, red-team rt42e F1), which no unique index of the table
// makes the INSERT wait for — and PostgreSQL checks it against the newest committed
// version (under REPEATABLE READ and SERIALIZABLE a tombstone written after the
// snapshot — a key inserted and deleted under a newer token since, which a red-team
// pass re-inserted under an older one — fails it with serialization_failure; a
// placeholder inserted for a key without one is removed at once). Then it reads the
// tombstone: in READ COMMITTED with a fresh snapshot, which sees the DELETE's (or the
// claim's) tombstone once it committed; in REPEATABLE READ and SERIALIZABLE it also
// counts the rows with NEW's key that the snapshot sees: more than the new one means a
// concurrent transaction deleted the key after the snapshot was taken. Either fails the write
// with serialization_failure (40001; retry it: the retry sees the tombstone). An INSERT … ON CONFLICT DO NOTHING that skips its row inserts nothing
// and is not refused; one that inserts is checked.
//
// The refusal is RAISE … ERRCODE 'not_null_violation' (23502) with COLUMN set to the
// token column (and TABLE, SCHEMA), which the wrapper reports as fencedsql.ErrFenced —
// raised directly rather than by setting the token to NULL, so it holds even where the
// column is (wrongly) nullable.
//
// Before the triggers are replaced, the table is locked against writers (LOCK TABLE …
// IN SHARE ROW EXCLUSIVE MODE, in the carry-over's block) and a renamed or moved table's tombstones, recorded by
// the old name's (or old schema's) function into its tombstone table, are merged in
// (tombCarryOver; it needs a READ COMMITTED transaction when there is anything to
// carry over).
//
// Removing the triggers is one statement (UntombstoneDDL), which keeps the table:
//
//	DROP FUNCTION IF EXISTS <schema>.fencedsql_tombstone_<table>() CASCADE
//
// The tombstone table's rows are purged with schema.PurgeTombstones (deleted_at by
// the server's clock at the DELETE — clock_timestamp(), not the transaction's start,
// which a long deleting transaction put far in the past: a red-team pass purged a
// tombstone the moment its DELETE committed).
const (
	tombDeleteTrigger = "fencedsql_tombstone_delete"
	tombInsertTrigger = "fencedsql_tombstone_insert"
	tombRekeyTrigger  = "fencedsql_tombstone_rekey"
	// tombVersion marks the function body of this version of the tombstone guard;
	// TombstoneInstalledQuery reports an older one as not installed.
	tombVersion = tombMarker + "12"
	// tombVersionNumber is tombVersion's number.
	tombVersionNumber = 12
	// tombMarker begins every version's marker.
	tombMarker = "fencedsql tombstone guard v"
)

func tombFunc(name string) string { return boundedName(tombFuncPrefix, name, maxIdentLen) }

// tombFuncPrefix starts the name of every tombstone guard's function (tombFunc).
const tombFuncPrefix = "fencedsql_tombstone_"

// tombSchema is the schema the tombstone objects of table live in: its own, or public
// for an unqualified table (schema.Check resolves the schema before asking for DDL).
// A schema the catalog spelled (exact: resolved through the search_path) is kept as
// it is, never folded (red-team rt56d F4: "Mixed" became "mixed").
func tombSchema(table dialect.TableName) string {
	switch {
	case table.Schema == "":
		return "public"
	case table.ExactSchema:
		return table.Schema
	}
	return foldName(table.Schema)
}

// tombFuncName and tombTable are table's tombstone function and table, in
// tombSchema, both parts exact.
func tombFuncName(table dialect.TableName) dialect.TableName {
	return dialect.CatalogName(tombSchema(table), tombFunc(tombKept(table)))
}

func tombTable(table dialect.TableName) dialect.TableName {
	return dialect.CatalogName(tombSchema(table), boundedName(dialect.TombstoneTablePrefix, tombKept(table), maxIdentLen))
}

// tombKept is table's name as the server keeps it: folded, unless the catalog spelled
// it.
func tombKept(table dialect.TableName) string {
	if table.ExactName {
		return table.Name
	}
	return foldName(table.Name)
}

func pgLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// PrimaryKeyQuery lists the primary key columns of table in key order: name, type
// (format_type), collation (qualified and quoted, "" for the type's default) and the
// table's schema, and the column's equality operator when it is not pg_catalog's
// (citext's, KeyColumn.Equals). The key's columns only: a PRIMARY KEY … INCLUDE (…) index carries
// other columns after them, which are not the key (a red-team pass: a tombstone keyed
// on (id, balance) let a stale INSERT of the id with another balance through).
func (dialectImpl) PrimaryKeyQuery(table dialect.TableName) (query string, args []any) {
	return `SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod),
  CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation THEN
    (SELECT pg_catalog.quote_ident(cn.nspname) || '.' || pg_catalog.quote_ident(co.collname) FROM pg_catalog.pg_collation co JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace WHERE co.oid = a.attcollation)
  ELSE '' END,
  n.nspname::text,
  COALESCE((SELECT pg_catalog.quote_ident(opn.nspname) || '.' || o.oprname FROM pg_catalog.pg_opclass oc
    JOIN pg_catalog.pg_amop ao ON ao.amopfamily = oc.opcfamily AND ao.amoplefttype = oc.opcintype AND ao.amoprighttype = oc.opcintype AND ao.amopstrategy = 3
    JOIN pg_catalog.pg_operator o ON o.oid = ao.amopopr JOIN pg_catalog.pg_namespace opn ON opn.oid = o.oprnamespace
    WHERE oc.oid = i.indclass[k.ord - 1] AND opn.nspname <> 'pg_catalog'), '')
FROM pg_catalog.pg_index i
CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY k(attnum, ord)
JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
JOIN pg_catalog.pg_class c ON c.oid = i.indrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE i.indrelid = pg_catalog.to_regclass($1) AND i.indisprimary AND k.ord <= i.indnkeyatts
ORDER BY k.ord`,
		[]any{regclass(table)}
}

// TombstoneDDL returns the statements that create the tombstone table (if missing)
// and install table's tombstone triggers; run them in one transaction.
func (d dialectImpl) TombstoneDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	table = dialect.CatalogName(tombSchema(table), tombKept(table))
	tbl := table.Quote(d.QuoteIdent)
	tomb := tombTable(table).Quote(d.QuoteIdent)
	fn := tombFuncName(table).Quote(d.QuoteIdent)
	tok := d.QuoteIdent(tokenCol)
	cols, defs := make([]string, len(key)), make([]string, len(key))
	for i, k := range key {
		cols[i] = d.QuoteIdent(k.Name)
		defs[i] = cols[i] + " " + k.Type
		if k.Collation != "" {
			defs[i] += " COLLATE " + k.Collation
		}
		defs[i] += " NOT NULL"
	}
	list := strings.Join(cols, ", ")
	body := d.tombBody(tombVersionNumber, table, key, tokenCol)
	tag := dollarTag(body)
	trigger := func(name, when string) []string {
		return []string{
			"DROP TRIGGER IF EXISTS " + name + " ON " + tbl,
			"CREATE TRIGGER " + name + " " + when + " ON " + tbl + " FOR EACH ROW " + d.triggerWhen(name, table, tokenCol, key) + "EXECUTE FUNCTION " + fn + "()",
			"ALTER TABLE " + tbl + " ENABLE ALWAYS TRIGGER " + name,
		}
	}
	ddl := []string{
		ownedCheck(table.Schema, table.Name, tombObjectsOwned),
		"CREATE TABLE IF NOT EXISTS " + tomb + " (" + strings.Join(defs, ", ") + ", fence_token bigint NOT NULL, deleted_at timestamptz NOT NULL DEFAULT pg_catalog.now(), PRIMARY KEY (" + list + "))",
		"REVOKE ALL ON " + tomb + " FROM PUBLIC",
		d.tombCarryOver(tbl, tomb, fn, list),
		"CREATE OR REPLACE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS " + tag + body + tag,
		"REVOKE ALL ON FUNCTION " + fn + "() FROM PUBLIC",
	}
	ddl = append(ddl, d.absenceDDL(table, key, tomb, tbl, tok)...)
	ddl = append(ddl, ownedMark(table.Schema, table.Name, tombObjectsOwned))
	ddl = append(ddl, trigger(tombDeleteTrigger, "AFTER DELETE")...)
	ddl = append(ddl, trigger(tombInsertTrigger, "AFTER INSERT")...)
	return append(ddl, trigger(tombRekeyTrigger, "AFTER UPDATE")...)
}

// tombBody is the tombstone function's body for table (schema resolved, folded), its
// key and token column, as version v writes it: v12 (this one) or v11, the previous
// one, which recorded a deletion at the greater of the row's token and the
// one-statement DELETE's mark only, not at the transaction's raised token
// (txTokenSetting, red-team rt59b F2, F3), which guardObjects still accepts as the
// guard's own until the Fix re-creates it. (v10 counted the rows its snapshot sees
// under READ UNCOMMITTED too, red-team rt58b; v9 read the key's tombstone without
// locking it, red-team rt45b F5.)
func (d dialectImpl) tombBody(v int, table dialect.TableName, key []dialect.KeyColumn, tokenCol string) string {
	tbl := table.Quote(d.QuoteIdent)
	tomb := tombTable(table).Quote(d.QuoteIdent)
	tok := d.QuoteIdent(tokenCol)
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = d.QuoteIdent(k.Name)
	}
	list := strings.Join(cols, ", ")
	row := func(rec string) string {
		out := make([]string, len(cols))
		for i, c := range cols {
			out[i] = rec + "." + c
		}
		return strings.Join(out, ", ")
	}
	// match compares with the key's own equality (KeyColumn.Equals, qualified: the
	// function's search_path is pinned to pg_catalog, where citext's = is not — a
	// red-team pass found 'alice' let through after 'Alice' was deleted, by text's
	// case-sensitive = through a cast).
	match := func(alias, rec string) string {
		out := make([]string, len(cols))
		for i, c := range cols {
			eq := " = "
			if key[i].Equals != "" {
				eq = " OPERATOR(" + key[i].Equals + ") "
			}
			out[i] = alias + "." + c + eq + rec + "." + c
		}
		return strings.Join(out, " AND ")
	}
	record := func(token string) string {
		return `    INSERT INTO ` + tomb + ` AS t (` + list + `, fence_token, deleted_at)
    VALUES (` + row("OLD") + `, ` + token + `, pg_catalog.clock_timestamp())
    ON CONFLICT (` + list + `) DO UPDATE
      SET fence_token = GREATEST(t.fence_token, EXCLUDED.fence_token), deleted_at = EXCLUDED.deleted_at;
`
	}
	// The variables carry the reserved prefix and the pragma resolves a name a column
	// and a variable share to the column (the conflict targets name the key's columns
	// bare, as an index expression, where PL/pgSQL would otherwise substitute a
	// variable of the name or, under the default variable_conflict = error, fail every
	// write with 42702: red-team rt37a F2 keyed a table on a column named mark). The
	// pragma overrides the session's plpgsql.variable_conflict, so no connection's
	// setting changes what the function does. No variable is read inside a query that
	// has a user's table in scope (only as an INTO target or in an expression without
	// FROM), so the column never takes a variable's place.
	// v10 (red-team rt45b F5) reads the key's tombstone FOR SHARE: a claim of the
	// absent key recording it (the recorder's INSERT … ON CONFLICT DO UPDATE) then waits
	// for this transaction, and its lookup sees this row once it committed
	// (ErrClaimConflict), where the probe's DO NOTHING met a committed tombstone
	// without locking it and left the recorder nothing to wait for.
	lock := ""
	if v >= 10 {
		lock = " FOR SHARE"
	}
	// v11 (red-team rt58b) counts under REPEATABLE READ and SERIALIZABLE only
	// (snapshotLevel), not under READ UNCOMMITTED, which reads as READ COMMITTED.
	snapshot := snapshotLevelBefore("<>")
	if v >= 11 {
		snapshot = snapshotLevel
	}
	// v12 (red-team rt59b F2, F3) records a deletion, and the key a row left, at no
	// less than the transaction's token the wrapper recorded (txTokenSetting) once a
	// lease raised it: a row fenced under the earlier token and deleted by a cascade,
	// a cross-partition move or a user's trigger carried the earlier stamp.
	txTok := ""
	if v >= 12 {
		txTok = `, COALESCE(NULLIF(pg_catalog.current_setting('` + txTokenSetting + `', true), '')::bigint, 0)`
	}
	body := `
#variable_conflict use_column
-- ` + tombMarker + strconv.Itoa(v) + `
-- ` + markMarker + `
DECLARE
  fencedsql_newer bigint;
  fencedsql_seen bigint;
  fencedsql_mark text;
  fencedsql_marked bigint;
BEGIN
  IF TG_OP = 'DELETE' THEN
    -- The wrapper's one-statement DELETE marks the token it deletes under (see
    -- DeleteFence); the two-statement form stamped it on the row. The mark is two
    -- transaction-local settings: the token, and "<oid>/<statement start>" of the table
    -- the transaction deleted from under it (this table, or the one whose DELETE
    -- reached this partition or child). The time is not compared (a trigger may
    -- change its text); an earlier statement's mark only raises what is recorded.
    fencedsql_mark := pg_catalog.split_part(pg_catalog.current_setting('` + deleteStmtSetting + `', true), '/', 1);
    -- (The first test is a simple expression, which PL/pgSQL evaluates without the
    -- executor; the ancestors' query runs only under another table's mark.)
    IF fencedsql_mark = TG_RELID::text THEN
      fencedsql_marked := pg_catalog.current_setting('` + deleteTokenSetting + `', true)::bigint;
    ELSIF fencedsql_mark <> '' THEN
      IF EXISTS (WITH RECURSIVE a(oid) AS (
          SELECT i.inhparent FROM pg_catalog.pg_inherits i WHERE i.inhrelid = TG_RELID
          UNION SELECT i.inhparent FROM pg_catalog.pg_inherits i JOIN a ON i.inhrelid = a.oid)
        SELECT 1 FROM a WHERE a.oid::text = fencedsql_mark) THEN
        fencedsql_marked := pg_catalog.current_setting('` + deleteTokenSetting + `', true)::bigint;
      END IF;
    END IF;
` + record(`GREATEST(COALESCE(OLD.`+tok+`, 0), COALESCE(fencedsql_marked, 0)`+txTok+`)`) + `    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' THEN
` + record(`GREATEST(COALESCE(OLD.`+tok+`, 0), COALESCE(NEW.`+tok+`, 0)`+txTok+`)`) + `  END IF;
  -- Probe the key first, in every isolation level: the INSERT … ON CONFLICT DO NOTHING
  -- waits for a transaction that is writing the key's tombstone (a claim of the absent
  -- key recording it, which no unique index of the table makes this INSERT wait for:
  -- red-team rt42e F1) and is judged against the newest committed tombstone — under
  -- REPEATABLE READ and SERIALIZABLE one the snapshot cannot see fails it with
  -- serialization_failure (40001). No tombstone: the placeholder (token 0, which
  -- refuses nothing) is removed again. Then the tombstone is read: under READ
  -- COMMITTED with a snapshot taken after that wait.
  INSERT INTO ` + tomb + ` AS t (` + list + `, fence_token, deleted_at) VALUES (` + row("NEW") + `, 0, pg_catalog.clock_timestamp())
    ON CONFLICT (` + list + `) DO NOTHING;
  IF FOUND THEN
    DELETE FROM ` + tomb + ` t WHERE ` + match("t", "NEW") + ` AND t.fence_token = 0;
  END IF;
  SELECT t.fence_token INTO fencedsql_newer FROM ` + tomb + ` t WHERE ` + match("t", "NEW") + lock + `;
  IF fencedsql_newer IS NOT NULL AND (NEW.` + tok + ` IS NULL OR fencedsql_newer > NEW.` + tok + `) THEN
    RAISE EXCEPTION USING ERRCODE = 'not_null_violation', COLUMN = ` + pgLiteral(tokenCol) + `,
      TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA,
      MESSAGE = pg_catalog.format('fencedsql: tombstone on %I.%I: a row with this key was deleted under a newer fence token than %s (null value in column %I violates the fence)', TG_TABLE_SCHEMA, TG_TABLE_NAME, NEW.` + tok + `, ` + pgLiteral(tokenCol) + `),
      HINT = 'the writer holds a stale fencing token: see schema.PurgeTombstones';
  END IF;
  IF ` + snapshot + ` THEN
    -- The snapshot cannot see a row deleted after it either: count the rows with the
    -- key it sees.
    SELECT pg_catalog.count(*) INTO fencedsql_seen FROM ` + tbl + ` x WHERE ` + match("x", "NEW") + `;
    IF fencedsql_seen > 1 THEN
      RAISE EXCEPTION USING ERRCODE = 'serialization_failure', TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA,
        MESSAGE = pg_catalog.format('fencedsql: tombstone on %I.%I: a concurrent transaction deleted this key after this transaction''s snapshot; retry the transaction', TG_TABLE_SCHEMA, TG_TABLE_NAME);
    END IF;
  END IF;
  RETURN NULL;
END
`
	return body
}

// tombCarryOver is the statement of TombstoneDDL that carries a moved table's
// tombstones over (red-team rt30a F1, rt31a F3). ALTER TABLE … RENAME and ALTER TABLE …
// SET SCHEMA move the tombstone triggers with the table, still calling the function
// they were created with, which records into its own tombstone table (the old name's,
// in the old schema); a re-install under the new name or schema must not start from an
// empty one. For each tombstone trigger of table whose function is a
// fencedsql_tombstone_ function other than fn (by OID, in whatever schema: the same
// name in the old schema is another function), the tombstone table that function
// records into (the target of its first INSERT) is found, and when it is a
// fencedsql_tomb_ table (in any schema) other than tomb, its rows are merged into
// tomb, keeping the greater token of a key. The old table is left in place (another
// table may have taken the old name and share it; schema.PurgeTombstones ages its rows
// out). A key whose columns were renamed as well fails the statement, and with it the
// Fix: nothing is installed over lost tombstones.
//
// The merge must see every tombstone the old triggers recorded (rt31a F4): the block
// first locks table against writers (SHARE ROW EXCLUSIVE, held to the end of the
// Fix's transaction), so a DELETE of it either
// committed before the lock was granted or waits until the new triggers are in place;
// and the merge reads with a snapshot taken after the lock, which READ COMMITTED (and
// READ UNCOMMITTED, run as READ COMMITTED: snapshotLevel, red-team rt58b) gives (each
// statement of the block takes its own). Under REPEATABLE READ or SERIALIZABLE
// the transaction's snapshot may predate the lock (taken by the Fix's first statement)
// and miss a tombstone committed in between: when there is anything to carry over, the
// block refuses there (SQLSTATE 55000, object_not_in_prerequisite_state; nothing is
// installed, the old triggers stay), and the Fix is to be run in a READ COMMITTED
// transaction (BEGIN ISOLATION LEVEL READ COMMITTED; fencedsql-schema -apply does).
func (d dialectImpl) tombCarryOver(tbl, tomb, fn, list string) string {
	merge := "INSERT INTO " + tomb + " AS t (" + list + ", fence_token, deleted_at) SELECT " + list + ", fence_token, deleted_at FROM "
	conflict := " ON CONFLICT (" + list + ") DO UPDATE SET fence_token = GREATEST(t.fence_token, EXCLUDED.fence_token), deleted_at = GREATEST(t.deleted_at, EXCLUDED.deleted_at)"
	body := `
DECLARE
  old pg_catalog.oid;
  oldname text;
BEGIN
  LOCK TABLE ` + tbl + ` IN SHARE ROW EXCLUSIVE MODE;
  FOR old IN SELECT DISTINCT pg_catalog.to_regclass(pg_catalog.substring(p.prosrc, 'INSERT INTO (.+?) AS t \('))::pg_catalog.oid
      FROM pg_catalog.pg_trigger tg JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) tg.tgfoid
      WHERE tg.tgrelid OPERATOR(pg_catalog.=) ` + pgLiteral(tbl) + `::pg_catalog.regclass
        AND tg.tgname OPERATOR(pg_catalog.=) ANY (ARRAY[` + pgLiteral(tombDeleteTrigger) + `, ` + pgLiteral(tombInsertTrigger) + `, ` + pgLiteral(tombRekeyTrigger) + `])
        AND p.proname OPERATOR(pg_catalog.~~) 'fencedsql\_tombstone\_%'
        AND p.oid OPERATOR(pg_catalog.<>) COALESCE(pg_catalog.to_regprocedure(` + pgLiteral(fn+"()") + `)::pg_catalog.oid, 0)
  LOOP
    SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) INTO oldname
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
      WHERE c.oid OPERATOR(pg_catalog.=) old AND c.relkind OPERATOR(pg_catalog.=) 'r'
        AND c.relname OPERATOR(pg_catalog.~~) 'fencedsql\_tomb\_%'
        AND c.oid OPERATOR(pg_catalog.<>) ` + pgLiteral(tomb) + `::pg_catalog.regclass;
    IF oldname IS NOT NULL THEN
      IF ` + snapshotLevel + ` THEN
        RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
          MESSAGE = pg_catalog.format('fencedsql: carrying the tombstones of %s over to %s needs a READ COMMITTED transaction (this one is %s, whose snapshot may miss a DELETE committed while the Fix waited for its lock): run the Fix in BEGIN ISOLATION LEVEL READ COMMITTED', oldname, ` + pgLiteral(tomb) + `, pg_catalog.current_setting('transaction_isolation'));
      END IF;
      EXECUTE ` + pgLiteral(merge) + ` || oldname || ` + pgLiteral(conflict) + `;
    END IF;
  END LOOP;
END
`
	tag := dollarTag(body)
	return "DO " + tag + body + tag
}

// triggerWhen is the WHEN clause of a guard or tombstone trigger of table (on table
// or a descendant of it), with a trailing space: the guard's DELETE trigger fires
// unless the wrapper's one-statement DELETE of table marked the row's deletion
// (guardDeleteWhen), the tombstone's rekey trigger only when the key changed, the
// others always ("").
func (d dialectImpl) triggerWhen(trigger string, table dialect.TableName, tokenCol string, key []dialect.KeyColumn) string {
	quote := d.QuoteIdent
	switch trigger {
	case guardDeleteTrigger:
		return guardDeleteWhen(d, table, tokenCol)
	case tombRekeyTrigger:
	default:
		return ""
	}
	changed := make([]string, len(key))
	for i, k := range key {
		c := quote(k.Name)
		changed[i] = "OLD." + c + " IS DISTINCT FROM NEW." + c
	}
	return "WHEN (" + strings.Join(changed, " OR ") + ") "
}

// UntombstoneDDL drops table's tombstone function and with it the three triggers.
func (d dialectImpl) UntombstoneDDL(table dialect.TableName) []string {
	return []string{"DROP FUNCTION IF EXISTS " + tombFuncName(table).Quote(d.QuoteIdent) + "() CASCADE", d.dropAbsence(table)}
}

// TombstoneInstalledQuery yields 1 when the three tombstone triggers of this version
// exist on table as TombstoneDDL creates them (AFTER DELETE and AFTER INSERT row
// triggers without a WHEN clause, the AFTER UPDATE row trigger, on no column list: one
// re-created on another event or WHEN (false) is none, red-team rt20g F4), fire always
// (ENABLE ALWAYS) and call the table's tombstone function in the table's schema (one
// left in the schema a moved table came from is reported: the Fix carries its
// tombstones over, red-team rt31a F3),
// SECURITY DEFINER, and its tombstone table exists, with the absence recorder of this
// version, the function the wrapper's exactly typed call resolves to (recorderCallable:
// of the recorder's signature, no overload making the call ambiguous; an overload had
// taken an untyped call: red-team rt44a F2). Another routine of the recorder's name is
// a namesake (guardNamesakes), reported on its own (red-team rt58a F2).
func (dialectImpl) TombstoneInstalledQuery(table dialect.TableName) (query string, args []any) {
	return `SELECT CASE WHEN COUNT(*) = 3 AND pg_catalog.to_regclass($6) IS NOT NULL THEN 1 ELSE 0 END FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = pg_catalog.to_regclass($1) AND t.tgenabled = 'A' AND pg_catalog.cardinality(t.tgattr::pg_catalog.int2[]) = 0 AND (t.tgname = $2 AND t.tgtype = 9 AND t.tgqual IS NULL OR t.tgname = $3 AND t.tgtype = 5 AND t.tgqual IS NULL OR t.tgname = $4 AND t.tgtype = 17) AND p.proname = $5 AND p.pronamespace = (SELECT ns.oid FROM pg_catalog.pg_namespace ns WHERE ns.nspname = $9) AND p.prosecdef AND pg_catalog.strpos(p.prosrc, $7) > 0 AND $8 = ANY(p.proconfig)
  AND EXISTS (SELECT 1 FROM pg_catalog.pg_proc ap WHERE ap.proname = $10 AND ap.pronamespace = p.pronamespace AND ap.prosecdef AND pg_catalog.strpos(ap.prosrc, $11) > 0
    AND ` + recorderCallable("ap", "pg_catalog.to_regclass($1)") + `)`,
		[]any{regclass(table), tombDeleteTrigger, tombInsertTrigger, tombRekeyTrigger, tombFunc(tombKept(table)), regclass(tombTable(table)), tombVersion, pinnedSearchPath, tombSchema(table),
			absenceFunc(foldName(table.Name)), absenceVersion}
}

// PurgeTombstonesQuery deletes table's tombstones older than olderThan (server clock).
func (d dialectImpl) PurgeTombstonesQuery(table dialect.TableName, olderThan time.Duration) (query string, args []any) {
	return "DELETE FROM " + tombTable(table).Quote(d.QuoteIdent) + " WHERE deleted_at < pg_catalog.now() - pg_catalog.make_interval(secs => $1)",
		[]any{olderThan.Seconds()}
}

var _ dialect.Tombstoner = dialectImpl{}

// UniqueKeysQuery lists the key columns of table's unique indexes other than the
// primary key's (unique constraints included: each has its index; dialect.UniqueKeyFinder);
// an expression reads as its text.
func (dialectImpl) UniqueKeysQuery(table dialect.TableName) (query string, args []any) {
	return `SELECT ic.relname::text, COALESCE(a.attname::text, pg_catalog.pg_get_indexdef(i.indexrelid, k.ord::int, true))
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY k(attnum, ord)
LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum > 0
WHERE i.indrelid = pg_catalog.to_regclass($1) AND i.indisunique AND NOT i.indisprimary AND k.ord <= i.indnkeyatts
ORDER BY 1, k.ord`, []any{regclass(table)}
}

var _ dialect.UniqueKeyFinder = dialectImpl{}

// TombstoneTablesQuery lists every tombstone table of the database, in every schema
// (dialect.TombstoneLister).
func (dialectImpl) TombstoneTablesQuery() string {
	return `SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE c.relkind OPERATOR(pg_catalog.=) 'r' AND c.relname OPERATOR(pg_catalog.~~) 'fencedsql\_tomb\_%' AND n.nspname OPERATOR(pg_catalog.!~~) 'pg\_%'`
}

var _ dialect.TombstoneLister = dialectImpl{}

package postgres

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardTableSafe is the condition, on the pg_class row alias c, that a table the guards
// read — a tombstone table, the token floor — is as the guards created it, in what
// decides what the guards see (red-team rt27c): a plain table ('r'; not a partition or
// an inheritance child, whose parent's statements write its rows under the parent's
// privileges), without row security (a policy hides tombstones from the guard's check,
// or runs another role's code), whose column col (an SQL expression: 'fence_token',
// 'floor') is a NOT NULL bigint neither generated nor an identity (a text column
// compares '60' above '100', a real one keeps 2^24+1 as 2^24), with no foreign key (a
// cascade from an ordinary table, which the application role may write through the
// pool, erases tombstones or lowers the floor as the table's owner), no rule, and no
// trigger but own (an SQL expression: the name of the one trigger the guards put there,
// calling the function of that name in the table's schema, ownTrigger; the empty string
// for none; the internal triggers of foreign keys referencing the table are not
// judged) — and own, where present, firing always (firesAlways, as the guards' own
// triggers must: red-team rt50a F1, the floor's sync trigger demoted to origin-only by
// an ALTER TABLE … ENABLE TRIGGER ALL, which pg_restore --disable-triggers emits, did
// not fire for a raise applied by logical replication, and the guards' copy of the
// floor stayed below it). A trigger ON the table may drop or lower every tombstone or
// floor written (BEFORE … RETURN NULL).
//
// It is the one judgement of these tables: the floor tools (floorTableSafe, in
// GuardFloorsQuery) and the side-door check (guardTables: schema.Check and the lazy
// check before the first guarded write) use it, spelled with OPERATOR(pg_catalog.…)
// because the floor tools run it on the caller's search_path.
func guardTableSafe(c, col, own string) string {
	return ` AND ` + c + `.relkind OPERATOR(pg_catalog.=) 'r' AND NOT ` + c + `.relrowsecurity AND NOT ` + c + `.relforcerowsecurity
  AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) ` + c + `.oid AND a.attname OPERATOR(pg_catalog.=) ` + col + `
    AND NOT a.attisdropped AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.int8'::pg_catalog.regtype AND a.attnotnull
    AND a.attgenerated OPERATOR(pg_catalog.=) '' AND a.attidentity OPERATOR(pg_catalog.=) '')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conrelid OPERATOR(pg_catalog.=) ` + c + `.oid AND k.contype OPERATOR(pg_catalog.=) 'f')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhrelid OPERATOR(pg_catalog.=) ` + c + `.oid)
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_rewrite r WHERE r.ev_class OPERATOR(pg_catalog.=) ` + c + `.oid)
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g WHERE g.tgrelid OPERATOR(pg_catalog.=) ` + c + `.oid AND NOT g.tgisinternal
    AND NOT (` + ownTrigger("g", c, own) + ` AND ` + firesAlways("g") + `))`
}

// ownTrigger is the condition, on the pg_trigger row alias g of a trigger on the
// pg_class row alias c, that it is the guards' own trigger own (an SQL expression,
// see guardTableSafe): named own, calling the function of that name in c's schema.
func ownTrigger(g, c, own string) string {
	return g + `.tgname OPERATOR(pg_catalog.=) ` + own + ` AND ` + g + `.tgfoid IN (SELECT o.oid FROM pg_catalog.pg_proc o
      WHERE o.pronamespace OPERATOR(pg_catalog.=) ` + c + `.relnamespace AND o.proname OPERATOR(pg_catalog.=) ` + own + `)`
}

// tgAlways is pg_trigger.tgenabled of a trigger that fires in every
// session_replication_role (ENABLE ALWAYS): every trigger the guards install is, so that
// it fires in logical replication's apply workers (replica) and in sessions that set
// the role themselves; plain ENABLE ('O') fires in origin and local sessions only.
const tgAlways = "A"

// firesAlways is the condition, on the pg_trigger row alias g, that the trigger fires
// always (tgAlways), as the guards' triggers must (triggerProblem judges theirs by it).
func firesAlways(g string) string {
	return g + `.tgenabled OPERATOR(pg_catalog.=) '` + tgAlways + `'`
}

// tombClockSafe is the condition, on the pg_class row alias c of a tombstone table,
// that its deleted_at is the column TombstoneDDL creates: timestamptz NOT NULL, not
// generated (red-team rt46b F3). The guards date a tombstone by the server's clock
// and PurgeTombstones removes those dated before now() less the retention: a date
// column dates it at midnight (a one-hour retention purges it at once), a timestamp
// without time zone in the writing session's TimeZone, which the application may set,
// a text column compares as text — a tombstone purged early lets a stale holder
// re-create its key. guardTables reports a tombstone table that fails it, with the
// statement that restores the column.
func tombClockSafe(c string) string {
	return `EXISTS (SELECT 1 FROM pg_catalog.pg_attribute ca WHERE ca.attrelid OPERATOR(pg_catalog.=) ` + c + `.oid AND ca.attname OPERATOR(pg_catalog.=) 'deleted_at'
    AND ca.attnum OPERATOR(pg_catalog.>) 0 AND NOT ca.attisdropped AND ca.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.timestamptz'::pg_catalog.regtype
    AND ca.attnotnull AND ca.attgenerated OPERATOR(pg_catalog.=) '')`
}

// guardTableRow is what guardTables reads about a guard table that fails
// guardTableSafe, to say why and what restores it.
type guardTableRow struct {
	What      string   `json:"what"` // "tomb" or "floor"
	Schema    string   `json:"schema"`
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	RLS       bool     `json:"rls"`
	Col       string   `json:"col"`
	Type      string   `json:"type"` // "" when the column is missing
	NotNull   bool     `json:"notnull"`
	Generated string   `json:"generated"`
	Identity  string   `json:"identity"`
	FKs       []string `json:"fks"`
	Triggers  []string `json:"triggers"`
	Rules     []string `json:"rules"`
	// OwnMode is the tgenabled of the guards' own trigger on it (the floor's sync
	// trigger) when that does not fire always (guardTableSafe); "" when it does, or
	// is missing.
	OwnMode string `json:"own_mode"`
	Own     string `json:"own"`
	Clock   *struct {
		Type      string `json:"type"`
		NotNull   bool   `json:"notnull"`
		Generated string `json:"generated"`
	} `json:"clock"` // the tombstone table's deleted_at; nil for the floor, or when missing
	Parents []struct {
		Schema    string `json:"schema"`
		Name      string `json:"name"`
		Partition bool   `json:"partition"`
	} `json:"parents"`
}

// guardTables finds the tables the table's guards read that are not as the guards
// created them (dialect.SideDoorGuardTable, red-team rt27c F1, F3–F6): the table's
// tombstone table (in the table's own schema) and the token floor its guard functions
// read (floorSchemaSQL), each judged by guardTableSafe — one catalog query for both.
// TombstoneDDL and FloorDDL create them only if missing (CREATE TABLE IF NOT EXISTS),
// so a migration's or an owner's change stays, and the guards, intact themselves,
// then record tombstones lower than written (a token column retyped text), not at all
// (a trigger returning NULL, row security hiding them), or lose them to a cascade of a
// write the application may send through the pool (a foreign key ON DELETE CASCADE);
// the floor likewise. Fix: the statements that restore the table (the column made a
// NOT NULL bigint, the foreign keys, triggers and rules dropped, row security off, the
// table detached from its parent); a table that is no plain table or lacks its column
// gets none (drop it and re-run fencedsql-schema -apply). The tombstones or the floor
// written meanwhile may be low: the problem says to raise the floor afterwards.
func (d dialectImpl) guardTables(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	tombName := tombTable(fold(t.Table)).Name
	args := append([]any{tombName}, floorSchemaArgs(t.Table)...)
	rows, err := query(ctx, `WITH w(what, oid, col, own) AS (VALUES
  ('tomb', (SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.=) $1
    AND c.relnamespace OPERATOR(pg_catalog.=) (SELECT r.relnamespace FROM pg_catalog.pg_class r WHERE r.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($2))), 'fence_token'::pg_catalog.name, ''::pg_catalog.name),
  ('floor', (SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    WHERE c.relname OPERATOR(pg_catalog.=) $6 AND n.nspname OPERATOR(pg_catalog.=) `+floorSchemaSQL(2)+`), 'floor', '`+floorSyncTrigger+`'))
SELECT pg_catalog.json_build_object('what', w.what, 'schema', n.nspname, 'name', c.relname, 'kind', c.relkind,
  'rls', c.relrowsecurity OR c.relforcerowsecurity, 'col', w.col,
  'type', COALESCE(pg_catalog.format_type(a.atttypid, a.atttypmod), ''), 'notnull', COALESCE(a.attnotnull, false),
  'generated', COALESCE(a.attgenerated::pg_catalog.text, ''), 'identity', COALESCE(a.attidentity::pg_catalog.text, ''),
  'fks', (SELECT pg_catalog.json_agg(k.conname ORDER BY k.conname) FROM pg_catalog.pg_constraint k WHERE k.conrelid OPERATOR(pg_catalog.=) c.oid AND k.contype OPERATOR(pg_catalog.=) 'f'),
  'triggers', (SELECT pg_catalog.json_agg(g.tgname ORDER BY g.tgname) FROM pg_catalog.pg_trigger g WHERE g.tgrelid OPERATOR(pg_catalog.=) c.oid AND NOT g.tgisinternal
    AND NOT (`+ownTrigger("g", "c", "w.own")+`)),
  'own', w.own, 'own_mode', (SELECT pg_catalog.min(g.tgenabled::pg_catalog.text) FROM pg_catalog.pg_trigger g WHERE g.tgrelid OPERATOR(pg_catalog.=) c.oid AND NOT g.tgisinternal
    AND `+ownTrigger("g", "c", "w.own")+` AND NOT `+firesAlways("g")+`),
  'rules', (SELECT pg_catalog.json_agg(r.rulename ORDER BY r.rulename) FROM pg_catalog.pg_rewrite r WHERE r.ev_class OPERATOR(pg_catalog.=) c.oid),
  'parents', (SELECT pg_catalog.json_agg(pg_catalog.json_build_object('schema', pn.nspname, 'name', pc.relname, 'partition', c.relispartition))
    FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class pc ON pc.oid OPERATOR(pg_catalog.=) i.inhparent JOIN pg_catalog.pg_namespace pn ON pn.oid OPERATOR(pg_catalog.=) pc.relnamespace
    WHERE i.inhrelid OPERATOR(pg_catalog.=) c.oid),
  'clock', (SELECT pg_catalog.json_build_object('type', pg_catalog.format_type(ca.atttypid, ca.atttypmod), 'notnull', ca.attnotnull, 'generated', ca.attgenerated::pg_catalog.text)
    FROM pg_catalog.pg_attribute ca WHERE w.what OPERATOR(pg_catalog.=) 'tomb' AND ca.attrelid OPERATOR(pg_catalog.=) c.oid AND ca.attname OPERATOR(pg_catalog.=) 'deleted_at'
    AND ca.attnum OPERATOR(pg_catalog.>) 0 AND NOT ca.attisdropped))::pg_catalog.text
FROM w JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) w.oid JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
  LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) w.col AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
WHERE NOT (true`+guardTableSafe("c", "w.col", "w.own")+` AND (w.what OPERATOR(pg_catalog.<>) 'tomb' OR `+tombClockSafe("c")+`))
ORDER BY w.what DESC`, args...)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 1 {
			continue
		}
		var g guardTableRow
		if err := json.Unmarshal([]byte(r[0]), &g); err != nil {
			return nil, err
		}
		doors = append(doors, d.guardTableDoor(g, t.Table))
	}
	return doors, nil
}

// triggerMode names a pg_trigger.tgenabled value as ALTER TABLE spells it.
func triggerMode(tgenabled string) string {
	switch tgenabled {
	case "O":
		return "ENABLE, origin and local sessions only"
	case "R":
		return "ENABLE REPLICA, replica sessions only"
	case "D":
		return "disabled"
	}
	return "tgenabled " + tgenabled
}

// guardTableDoor is the door of one guard table that fails guardTableSafe.
func (d dialectImpl) guardTableDoor(g guardTableRow, table dialect.TableName) dialect.SideDoor {
	rel := dialect.TableName{Schema: g.Schema, Name: g.Name}
	tbl := rel.Quote(d.QuoteIdent)
	col := d.QuoteIdent(g.Col)
	var why, fix, alter []string
	fixable := true
	for _, k := range g.FKs {
		why = append(why, "the foreign key "+k+" (a cascade from the referenced table, written through the pool as its owner, changes or deletes its rows)")
		fix = append(fix, "ALTER TABLE "+tbl+" DROP CONSTRAINT IF EXISTS "+d.QuoteIdent(k))
	}
	for _, tg := range g.Triggers {
		why = append(why, "the trigger "+tg+" (it may drop or change every row the guards write)")
		fix = append(fix, "DROP TRIGGER IF EXISTS "+d.QuoteIdent(tg)+" ON "+tbl)
	}
	for _, ru := range g.Rules {
		why = append(why, "the rule "+ru+" (it rewrites the guards' writes)")
		fix = append(fix, "DROP RULE IF EXISTS "+d.QuoteIdent(ru)+" ON "+tbl)
	}
	for _, p := range g.Parents {
		parent := dialect.TableName{Schema: p.Schema, Name: p.Name}
		if p.Partition {
			why = append(why, "it is a partition of "+parent.String()+" (statements on the parent write its rows)")
			fix = append(fix, "ALTER TABLE "+parent.Quote(d.QuoteIdent)+" DETACH PARTITION "+tbl)
		} else {
			why = append(why, "it inherits from "+parent.String()+" (statements on the parent write its rows, under the parent's privileges)")
			fix = append(fix, "ALTER TABLE "+tbl+" NO INHERIT "+parent.Quote(d.QuoteIdent))
		}
	}
	if g.Kind != "r" {
		why = append(why, "it is not a plain table (relkind "+g.Kind+")")
		fixable = false
	}
	if g.RLS {
		why = append(why, "row security is enabled or forced (a policy hides rows from the guards' reads, or runs another role's code)")
		alter = append(alter, "NO FORCE ROW LEVEL SECURITY", "DISABLE ROW LEVEL SECURITY")
	}
	switch {
	case g.Type == "":
		why = append(why, "it has no column "+g.Col)
		fixable = false
	default:
		if g.Identity != "" {
			why = append(why, "its column "+g.Col+" is an identity column")
			alter = append(alter, "ALTER COLUMN "+col+" DROP IDENTITY")
		}
		if g.Generated != "" {
			why = append(why, "its column "+g.Col+" is generated")
			alter = append(alter, "ALTER COLUMN "+col+" DROP EXPRESSION")
		}
		if g.Type != "bigint" {
			why = append(why, "its column "+g.Col+" is "+g.Type+", not bigint (tokens are compared, or stored, as "+g.Type+": a text column keeps '60' above '100')")
			alter = append(alter, "ALTER COLUMN "+col+" TYPE bigint USING "+col+"::bigint")
		}
		if !g.NotNull {
			why = append(why, "its column "+g.Col+" is nullable")
			alter = append(alter, "ALTER COLUMN "+col+" SET NOT NULL")
		}
	}
	if g.What == "tomb" {
		clock := d.QuoteIdent("deleted_at")
		switch {
		case g.Clock == nil:
			why = append(why, "it has no column deleted_at")
			fixable = false
		default:
			if g.Clock.Generated != "" {
				why = append(why, "its column deleted_at is generated")
				alter = append(alter, "ALTER COLUMN "+clock+" DROP EXPRESSION")
			}
			if g.Clock.Type != "timestamp with time zone" {
				why = append(why, "its column deleted_at is "+g.Clock.Type+", not timestamptz (a date dates a tombstone at midnight, a timestamp in the writing session's time zone, a text compares as text: PurgeTombstones then removes fresh tombstones; those dated meanwhile keep their early date)")
				alter = append(alter, "ALTER COLUMN "+clock+" TYPE timestamptz USING "+clock+"::pg_catalog.timestamptz")
			}
			if !g.Clock.NotNull {
				why = append(why, "its column deleted_at is nullable")
				alter = append(alter, "ALTER COLUMN "+clock+" SET NOT NULL")
			}
		}
	}
	if len(alter) > 0 {
		fix = append(fix, "ALTER TABLE "+tbl+" "+strings.Join(alter, ", "))
	}
	if g.OwnMode != "" {
		why = append(why, "its trigger "+g.Own+" does not fire always ("+triggerMode(g.OwnMode)+"): where it does not fire — a session with session_replication_role = replica, as logical replication's apply workers run — a write of the floor leaves the guards' copy "+floorSeq+" below it, and the guards' fast path accepts every token at or above the copy")
		fix = append(fix, "ALTER TABLE "+tbl+" ENABLE ALWAYS TRIGGER "+d.QuoteIdent(g.Own))
		if g.What == "floor" {
			// Re-copies the floor into the copy (FloorDDL's last statement).
			fix = append(fix, "UPDATE "+tbl+" SET floor = floor WHERE id = 1")
		}
	}
	if len(why) == 0 {
		why = []string{"it is not as the guards created it"}
		fixable = false
	}
	what, lost, redo := "the tombstone table", "a tombstone recorded lower than its DELETE's token, or not at all, lets a stale holder insert the deleted key again", "drop it and re-run fencedsql-schema -apply"
	if g.What == "floor" {
		what, lost, redo = "the token floor", "a floor kept lower than raised lets a holder whose lease the raise ended write again", "drop it (and "+floorSeq+") and re-run fencedsql-schema -apply, then RaiseTokenFloor"
	}
	problem := what + " " + rel.String() + " that the guards of " + table.String() + " read is not as the guards created it: " + strings.Join(why, "; ") +
		". " + strings.ToUpper(lost[:1]) + lost[1:] + ", while the guards themselves look intact"
	if fixable {
		problem += "; the fix restores it"
	} else {
		problem += "; no statement restores it: " + redo
		fix = nil
	}
	problem += "; what was written meanwhile may be low: afterwards raise the token floor to the lock service's LastToken + 1 (RaiseTokenFloor)"
	return dialect.SideDoor{Kind: dialect.SideDoorGuardTable, Object: rel.String(), Problem: problem, Fix: fix}
}

package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The library's own guard objects of another table are not doors of a table named
// like one of their words (red-team rt56a F1). The word test (dialect.WritesTable)
// counts a statement that holds a write word and any word equal to the table's name,
// and the stock tombstone function (INSERT INTO … AS t … ON CONFLICT … DO UPDATE SET
// … = GREATEST(t.…, EXCLUDED.…), IF NOT FOUND THEN, VALUES, NEW., OLD.) and absence
// recorder (… FROM … x WHERE …, RETURNING … INTO …) of every guarded table hold a
// dozen such words: a guarded table named t, set, values, excluded, new, x … was
// refused on every write, and fencedsql-schema never reported it OK. A body that is,
// byte for byte, the text this version (or the previous one) installs for the
// relation R it belongs to — R's primary key read from the catalog, never out of the
// body — writes one table, R's tombstone table, and reads R: it is judged by that
// (stockWrites), not by the word test. Anything else — a changed body, a user's
// trigger or routine that writes a table named key or set, a tombstone guard moved
// with a renamed table (whose body names the old table) — is judged by the word test
// as before.

// stockWrites reports, for a body recognised as a stock guard object writing only the
// table wrote, whether it writes one of names (the guarded table's family names,
// familyNames): wrote's name in any case (its schema is not compared: that errs on
// the side of yes).
func stockWrites(wrote dialect.TableName, names []string) (string, bool) {
	for _, n := range names {
		if strings.EqualFold(n, wrote.Name) {
			return n, true
		}
	}
	return "", false
}

// tokenLiteral returns the token column named by the first string literal after
// marker in src (a pgLiteral: quotes doubled), ok false when there is none. Only a
// candidate: the caller compares the whole body it regenerates with it.
func tokenLiteral(src, marker string) (string, bool) {
	i := strings.Index(src, marker)
	if i < 0 {
		return "", false
	}
	rest := src[i+len(marker):]
	if !strings.HasPrefix(rest, "'") {
		return "", false
	}
	var b strings.Builder
	for j := 1; j < len(rest); j++ {
		if rest[j] != '\'' {
			b.WriteByte(rest[j])
			continue
		}
		if j+1 < len(rest) && rest[j+1] == '\'' {
			b.WriteByte('\'')
			j++
			continue
		}
		return b.String(), true
	}
	return "", false
}

// stockTombstoneBody reports whether src, in language lang, the body of the function a
// trigger on rel runs, is the tombstone function this version or the previous one
// installs for rel (guardObjects' comparison: TombstoneDDL's text for rel's primary
// key as the catalog lists it and the token column the body's refusal names), and
// returns the table it writes: rel's tombstone table. One catalog query (rel's primary
// key), run only for a body that carries the tombstone guard's marker.
func (d dialectImpl) stockTombstoneBody(ctx context.Context, query dialect.CatalogQuery, rel dialect.TableName, lang, src string) (dialect.TableName, bool, error) {
	if lang != "plpgsql" || !strings.Contains(src, tombMarker) {
		return dialect.TableName{}, false, nil
	}
	tok, ok := tokenLiteral(src, "ERRCODE = 'not_null_violation', COLUMN = ")
	if !ok || tok == "" {
		return dialect.TableName{}, false, nil
	}
	table, key, err := dialect.PrimaryKeyColumns(ctx, query, d, rel)
	if err != nil || len(key) == 0 {
		return dialect.TableName{}, false, err
	}
	table = fold(table)
	if src != d.tombBody(tombVersionNumber, table, key, tok) && src != d.tombBody(tombVersionNumber-1, table, key, tok) {
		return dialect.TableName{}, false, nil
	}
	return tombTable(table), true, nil
}

// stockRecorderBody reports whether src, in language lang, the body of the function
// fn, is the absence recorder this version (or an earlier one ownAbsence accepts)
// installs for the relation its privilege check names (the body's first literal
// after has_any_column_privilege: resolved by the catalog, its primary key read from
// the catalog, the token column the body's refusal names; fn must be that relation's
// recorder), and returns the table it writes: that relation's tombstone table. Two
// catalog queries, run only for a body that carries the recorder's marker.
func (d dialectImpl) stockRecorderBody(ctx context.Context, query dialect.CatalogQuery, fn dialect.TableName, lang, src string) (dialect.TableName, bool, error) {
	none := dialect.TableName{}
	if lang != "plpgsql" || !strings.Contains(src, absenceMarker) || !strings.HasPrefix(fn.Name, "fencedsql_tombclaim_") {
		return none, false, nil
	}
	tbl, ok := tokenLiteral(src, "has_any_column_privilege(fencedsql_who, ")
	if !ok {
		return none, false, nil
	}
	tok, ok := tokenLiteral(src, "ERRCODE = 'not_null_violation', COLUMN = ")
	if !ok || tok == "" {
		return none, false, nil
	}
	rows, err := query(ctx, `SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = pg_catalog.to_regclass($1)`, tbl)
	if err != nil || len(rows) != 1 || len(rows[0]) < 2 {
		return none, false, err
	}
	rel := dialect.CatalogName(rows[0][0], rows[0][1])
	_, key, err := dialect.PrimaryKeyColumns(ctx, query, d, rel)
	if err != nil || len(key) == 0 {
		return none, false, err
	}
	table := fold(rel)
	if absenceFuncName(table) != fn || !d.recorderText(src, table, key, tok) {
		return none, false, nil
	}
	return tombTable(table), true, nil
}

package fencedsql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// typedAbsence returns rec with the dialect's typed call of its recorder
// (dialect.AbsenceCaller, red-team rt44a: no overload takes the call, a key value the
// type cannot hold records nothing, a NOWAIT claim's record does not wait), rec
// itself where the dialect has none, nil where the dialect says no row of the key can
// exist. rec.args are the key's values in cols' order, then the token.
func typedAbsence(d dialect.Dialect, rec *absentRecord, table dialect.TableName, cols []plan.KeyColumn, nowait bool) *absentRecord {
	ac, ok := d.(dialect.AbsenceCaller)
	if !ok || len(rec.args) != len(cols)+1 {
		return rec
	}
	key := make([]dialect.KeyColumn, len(cols))
	for i, k := range cols {
		key[i] = dialect.KeyColumn{Name: k.Name, Type: k.Type}
	}
	tok, _ := rec.args[len(cols)].(int64)
	sql, args, ok := ac.AbsenceCall(table, key, rec.args[:len(cols)], tok, nowait)
	if !ok {
		return nil
	}
	return &absentRecord{g: rec.g, sql: sql, args: args, tok: rec.tok}
}

// absenceErr maps the failure of rec: the recorder's refusal of a key whose
// tombstone holds a newer token than the claim's (the key deleted, or claimed absent,
// under it: red-team rt44e F2; the tombstone guard's refusal, a NOT NULL violation on
// the token column) is a *FencedError carrying the claim's token, as the same claim of
// a row written under the newer token; its claim conflict (a concurrent transaction
// wrote the key under an older token after the claim read it as absent, rt44a F1) is
// ErrClaimConflict, its refusal of a table it cannot record for
// (dialect.AbsenceUnsupportedMark, rt44a F4) ErrUnsupported; any other error as a
// statement's without a plan.
func (k *core) absenceErr(ctx context.Context, rec *absentRecord, err error) error {
	g := rec.g
	info := k.dialect.Classify(err)
	switch {
	case info.Kind == dialect.ErrorNotNull && dialect.SameColumnName(k.dialect, info.Column, g.TokenCol):
		k.cfg.logger.Warn("fencedsql: claim of an absent key fenced by a newer token", "table", g.String(), "token", rec.tok)
		k.metrics.count(k.metrics.fenced, g)
		return k.explainFenced(ctx, &FencedError{Table: g.String(), Token: rec.tok, Err: err}, rec.tok, g)
	case info.Kind == dialect.ErrorClaimConflict:
		return &ClaimConflictError{Table: g.String(), Absent: true, Err: err}
	}
	if strings.Contains(err.Error(), dialect.AbsenceUnsupportedMark) {
		return &UnsupportedError{Table: g.String(), Reason: "a claim of an absent key through a table with inheritance children (a child's INSERT checks its own tombstones, which the record cannot reach): claim the key through the table that holds it: " + err.Error()}
	}
	return k.mapPassErr(err)
}

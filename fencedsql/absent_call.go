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
	return &absentRecord{g: rec.g, sql: sql, args: args, tok: rec.tok, rowSecurity: rec.rowSecurity}
}

// absenceErr maps the failure of rec: the recorder's refusal of a key whose
// tombstone holds a newer token than the claim's (the key deleted, or claimed absent,
// under it: red-team rt44e F2; the tombstone guard's refusal, a NOT NULL violation on
// the token column) is a *FencedError carrying the claim's token, as the same claim of
// a row written under the newer token; its claim conflict (a concurrent transaction
// wrote the key under an older token after the claim read it as absent, rt44a F1) is
// ErrClaimConflict, its refusal of a claim it cannot record (dialect.AbsenceUnsupportedMark:
// a table with inheritance children, rt44a F4; a claimed value too long for its key
// column under a collation where it may equal a key the column holds, rt45a F2)
// ErrUnsupported; any other error as a statement's without a plan. On a table where
// row-level security is in force for the pool's role (rec.rowSecurity), the claim
// conflict is ErrUnsupported naming row security instead (red-team rt48h F1): the
// recorder, its owner's rights unfiltered, found a row of the key the claim's
// policy-filtered read did not see — a row a policy hides from the claimer, which
// every retry would meet again. (A concurrent writer of a key the claimer's policy
// shows, committed between the claim's read and the record, is then reported the
// same way: the one over-refusal, in a race, of a claim the retry would have made.)
// A lock wait the server ended without the lock is ErrClaimConflict too (claimWaitFailed).
func (k *core) absenceErr(ctx context.Context, rec *absentRecord, err error) error {
	g := rec.g
	info := k.dialect.Classify(err)
	switch {
	case info.Kind == dialect.ErrorNotNull && dialect.SameColumnName(k.dialect, info.Column, g.TokenCol):
		k.cfg.logger.Warn("fencedsql: claim of an absent key fenced by a newer token", "table", g.String(), "token", rec.tok)
		k.metrics.count(k.metrics.fenced, g)
		return k.explainFenced(ctx, &FencedError{Table: g.String(), Token: rec.tok, Err: err}, rec.tok, g)
	case info.Kind == dialect.ErrorClaimConflict && rec.rowSecurity:
		k.metrics.count(k.metrics.unsupported, g)
		return &UnsupportedError{Table: g.String(), Reason: rowSecurityClaimReason + ": " + err.Error()}
	case info.Kind == dialect.ErrorClaimConflict:
		return &ClaimConflictError{Table: g.String(), Absent: true, Err: err}
	}
	if cerr := k.claimWaitFailed(rec.g, rec.nowait, true, err); cerr != nil {
		return cerr
	}
	if strings.Contains(err.Error(), dialect.AbsenceUnsupportedMark) {
		return &UnsupportedError{Table: g.String(), Reason: "a claim of an absent key the tombstone guard's recorder cannot record (nothing was claimed): " + err.Error()}
	}
	return k.mapPassErr(nil, err)
}

// rowSecurityClaimReason is the refusal's reason of a claim of an absent key whose
// recorder found a row of the key the claim did not see, on a table where row-level
// security is in force for the pool's role (red-team rt48h F1).
const rowSecurityClaimReason = "a claim of an absent key of a table where row-level security is in force for this role: a row of the key exists that the claim's read did not see " +
	"(a policy hides it from this role; no retry changes that), so the key is neither absent nor claimed; nothing was recorded. " +
	"Claim only keys the role's policies show it, or run the claim as a role the policies show the row to"

// claimWaitFailed is the one reading of a lock wait the server ended without the lock
// (dialect.ErrorLockWait: the caller's lock timeout ran out, or the wait closed a
// deadlock) in a statement the wrapper sent for a claim of table g: the claim's
// fencing UPDATE, its one-statement claim or its read (plan.Plan.ClaimPart; mapErr),
// the record of an absent key or its probe of whether the key's row exists
// (absent true: absenceErr, keyPresent). It returns ErrClaimConflict (retry the
// transaction), wrapping the server's error (errors.As still finds it), for every such
// failure: the claim's statements lock more than the plain read would — the record and
// the probe wait where the plain read returns no row at once (red-team rt62a F1,
// rt63a F2, rt64b F1, F2), the fencing UPDATE holds a write's lock where a FOR SHARE
// or FOR KEY SHARE read holds a share lock (rt64a F2) — and nothing was claimed by the
// failed statement. Under NOWAIT it returns nil: the server's error stands, as the
// NOWAIT read's own failure on a locked row does. Any other error: nil.
func (k *core) claimWaitFailed(g *plan.Table, nowait, absent bool, err error) error {
	if err == nil || nowait || g == nil || k.dialect.Classify(err).Kind != dialect.ErrorLockWait {
		return nil
	}
	return &ClaimConflictError{Table: g.String(), Absent: absent, Err: err, wait: claimWaited}
}

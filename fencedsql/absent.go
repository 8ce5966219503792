package fencedsql

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// Claims of an absent key (docs/design.md G10, red-team rt42e F1). A token-bound
// SELECT … FOR UPDATE stamps the rows it finds; one that finds none stamped nothing,
// so an older holder could create the key the newer one had just read as absent. A
// claim whose WHERE pins its table's whole primary key by equality (plan.Plan.AbsentKey)
// and that finds no row now records the key's absence at its token through the
// dialect's dialect.AbsenceRecorder (the tombstone guard's recorder), in the claim's
// transaction: the tombstone guard then refuses that key's INSERT or upsert under an
// older token, and a rollback (of the transaction or of a savepoint around the claim)
// undoes the record with the claim. What runs when:
//   - the statement is prepared before the claim is sent (the table's key and schema,
//     the recorder's verdict: catalog queries asked once per pool and table, as the
//     keyed claims' key), so that nothing is asked while the claim's rows are open;
//   - two statements (the fencing UPDATE, then the read): after the UPDATE, when it
//     stamped no row (or the driver cannot say), before the read;
//   - one statement (PostgreSQL's claim that returns its rows): when the rows close
//     having returned none (the count is known only then), or after Exec when it
//     reports no row.
// Recording a key that exists is harmless (dialect.AbsenceRecorder), so a count the
// wrapper cannot read records. A record that fails fails the statement (or its rows'
// Close) and marks the transaction so that Commit rolls it back: the claim's caller
// must not go on believing the key claimed. Without the schema checks (a mock driver),
// without a tombstone guard on the table, or when the WHERE does not pin the whole
// key, nothing is recorded: the claim of an absent key claims nothing, as before. A
// partition's claims are recorded by its root's recorder (the root's tombstone guard
// runs on the partition's rows); a table whose tombstone guard is there but no
// recorder of this version can record its claims refuses the claim with
// ErrUnsupported instead of claiming nothing (red-team rt45b F7).

// absentRecord is the recorder's statement and arguments for one claim.
type absentRecord struct {
	g    *plan.Table
	sql  string
	args []any
	tok  uint64 // the claim's token
	// rowSecurity: row-level security is in force on the table for the pool's role
	// (rowSecurityActive): the recorder's claim conflict is then a row a policy hid
	// from the claim, reported as ErrUnsupported (red-team rt48h F1).
	rowSecurity bool
	// nowait: the claim's locking read has NOWAIT (its record does not wait either).
	nowait bool
	// probe (a claim whose WHERE has conjuncts besides the key's: plan.AbsentOther)
	// reads, by a locking read, whether a row of the key exists; with probeArgs.
	probe     string
	probeArgs []any
}

// absentRecordFor returns the record of p's key, run with args, when p pins its
// table's whole primary key and the table's recorder is installed; nil otherwise.
func (c *conn) absentRecordFor(ctx context.Context, p *plan.Plan, args []driver.NamedValue) (*absentRecord, error) {
	if len(p.Absent) == 0 || p.Guard == nil || !c.core.cfg.schemaCheck || !c.hasToken(ctx) {
		return nil, nil
	}
	ar, ok := c.core.dialect.(dialect.AbsenceRecorder)
	ts, ok2 := c.core.dialect.(dialect.Tombstoner)
	if !ok || !ok2 {
		return nil, nil
	}
	k, err := c.rowKeyOf(ctx, ts, p.Guard)
	if err != nil {
		return nil, err
	}
	// A NULL matches no key, and no row of a NULL key can be inserted: no argument
	// pins nothing.
	arg := func(i int) (any, bool) {
		if i >= len(args) || args[i].Name != "" || args[i].Ordinal != i+1 || args[i].Value == nil {
			return nil, false
		}
		return args[i].Value, true
	}
	terms, ok := p.AbsentKey(k.cols, arg)
	if !ok {
		return nil, nil
	}
	vals := make([]any, 0, len(terms)+1)
	for _, t := range terms {
		if t.Arg < 0 {
			vals = append(vals, t.Lit)
			continue
		}
		v, ok := arg(t.Arg)
		if !ok {
			return nil, nil
		}
		vals = append(vals, v)
	}
	table := k.table(p.Guard)
	row, err := c.tableRow(ctx, &c.core.absence, p.Guard, "absence recorder", func(dialect.TableName) (string, []any) {
		return ar.AbsenceRecorderQuery(table)
	})
	if err != nil {
		return nil, err
	}
	switch {
	case len(row) == 0 || row[0] == "0" || row[0] == "":
		return nil, nil
	case row[0] != "1":
		// The tombstone guard is there, but no recorder can record the claim (red-team
		// rt45b F7): refuse it rather than claim nothing.
		return nil, &UnsupportedError{Table: p.Guard.String(), Reason: "a claim of an absent key of a table whose tombstone guard has no recorder of this version for it " +
			"(a partition whose root's recorder is missing or of an older version, a table whose tombstone triggers call another table's function, " +
			"a tombstone function of an earlier version, whose INSERT check a claim could race): " +
			"re-run fencedsql-schema -apply, or claim the key through the table that holds the tombstone guard"}
	case len(row) >= 3 && row[1] != "" && row[2] != "":
		// A partition's claims are recorded by its root's recorder.
		table = dialect.CatalogName(row[1], row[2])
	}
	tok, err := c.tokenFor(ctx, p.Guard)
	if err != nil {
		return nil, err
	}
	var probe string
	var probeArgs []any
	if p.AbsentOther(len(terms)) {
		probe, probeArgs = c.keyProbe(ar, k.table(p.Guard), k.cols, terms, vals, p.NoWait)
	}
	rls, err := c.rowSecurityActive(ctx, p.Guard)
	if err != nil {
		return nil, err
	}
	vals = append(vals, int64(tok))
	rec := typedAbsence(c.core.dialect, &absentRecord{g: p.Guard, sql: ar.AbsenceRecordSQL(table, len(terms)), args: vals, tok: tok}, table, k.cols, p.NoWait)
	if rec != nil {
		rec.probe, rec.probeArgs, rec.rowSecurity, rec.nowait = probe, probeArgs, rls, p.NoWait
	}
	return rec, nil
}

// keyProbe is the read of whether a row of the key vals (terms' values, in the key
// cols' order) exists in table (rowKey.table): SELECT 1
// … WHERE each key column = its value, in the claim's transaction (red-team rt46b
// F4), with ar's locking clause (dialect.AbsenceRecorder.KeyProbeLock; nowait: the
// claim's NOWAIT). A locking read, because a plain one reads the transaction's
// snapshot under REPEATABLE READ (MySQL/MariaDB's default) and SERIALIZABLE, where a
// row deleted since is still there while the claim's own locking read found it gone:
// "present", nothing recorded, and an INSERT of the key under a token between the
// DELETE's and the claimer's landed (red-team rt47b F3). The locking read sees the
// latest committed row (PostgreSQL under REPEATABLE READ and SERIALIZABLE fails with a
// serialization failure instead where the snapshot's row was deleted since: the retry
// records), and its lock keeps the answer until the transaction ends. An integer
// literal goes as an int64 (PostgreSQL types the parameter by the column).
func (c *conn) keyProbe(ar dialect.AbsenceRecorder, table dialect.TableName, cols []plan.KeyColumn, terms []plan.KeyTerm, vals []any, nowait bool) (string, []any) {
	d := c.core.dialect
	where := make([]string, len(cols))
	args := make([]any, len(cols))
	for i, col := range cols {
		ph := "?"
		if d.NumberedParams() {
			ph = "$" + strconv.Itoa(i+1)
		}
		where[i] = d.QuoteIdent(col.Name) + " = " + ph
		args[i] = vals[i]
		if t := terms[i]; t.Arg < 0 && !t.Str {
			if n, err := strconv.ParseInt(t.Lit, 10, 64); err == nil {
				args[i] = n
			}
		}
	}
	return "SELECT 1 FROM " + table.Quote(d.QuoteIdent) + " WHERE " + strings.Join(where, " AND ") + ar.KeyProbeLock(nowait), args
}

// keyPresent runs rec's probe (none: false): whether the claim that stamped nothing
// found its key's row not meeting its other conjuncts — the key is then present, not
// absent, and nothing is recorded: the recorder's conflict lookup would take that
// row, under an older token, for one written after the claim read the key, and
// refuse the claim with a retry that fails the same way forever (red-team rt46b F4).
// The caller then runs its claim again (claimAgain): a row that began to match in
// between (a concurrent writer under READ COMMITTED) is stamped, or reported.
func (c *conn) keyPresent(ctx context.Context, rec *absentRecord) (bool, error) {
	if rec == nil || rec.probe == "" {
		return false, nil
	}
	rows, err := c.queryStrings(ctx, rec.probe, rec.probeArgs)
	if err != nil {
		mapped := c.core.claimWaitFailed(rec.g, rec.nowait, true, err)
		if mapped == nil {
			mapped = c.core.mapPassErr(nil, err)
		}
		err = fmt.Errorf("fencedsql: reading whether the key claimed of %s exists: %w", rec.g.String(), mapped)
		c.breakTxUnlessAborted(err)
		return false, err
	}
	return len(rows) > 0, nil
}

// claimMatchedLate is the error of a one-statement claim that returned no row and
// whose second run (keyPresent) stamped one: the row began to match after the claim
// read the key; the caller saw no row, so the transaction is to be retried.
func (c *conn) claimMatchedLate(g *plan.Table) error {
	err := fmt.Errorf("fencedsql: claim of %s: a row of the claimed key began to match the claim's condition after the claim read none (a concurrent write): retry the transaction: %w", g.String(), ErrClaimConflict)
	c.breakTx(err)
	return err
}

// recordAbsence runs rec (nil: nothing). On failure the open transaction is marked
// so that Commit rolls it back with the error.
func (c *conn) recordAbsence(ctx context.Context, rec *absentRecord) error {
	if rec == nil {
		return nil
	}
	if _, err := c.queryStrings(ctx, rec.sql, rec.args); err != nil {
		err = fmt.Errorf("fencedsql: recording the claim of an absent key of %s: %w", rec.g.String(), c.core.absenceErr(ctx, rec, err))
		c.breakTxUnlessAborted(err)
		return err
	}
	return nil
}

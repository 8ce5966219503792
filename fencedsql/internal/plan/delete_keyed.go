package plan

// Keyed DELETEs (MySQL/MariaDB). A DELETE that runs as two statements (no guard to
// take it in one) stamps its rows with a fencing UPDATE and then deletes the rows of
// its selection that carry the token. Rows the holder stamped before carry the token
// too, and whatever makes the second selection differ from the first — the
// statement's clock read later, a stored function or view reading it, an aggregate
// over a column the UPDATE changes (ON UPDATE CURRENT_TIMESTAMP, a trigger), a tie in
// an ORDER BY … LIMIT broken the other way — can drop a stamped row and take in such
// an earlier one: the counts match, the wrong row is deleted (red-team rt14c F2,
// rt17k). The keyed form records the stamped rows' keys as a keyed claim does
// (claim_keyed.go) and restricts the DELETE to them:
//
//	UPDATE t SET version = version + 1 + 0 * (<record>), fence_token = … WHERE … ORDER BY … LIMIT …
//	DELETE FROM t WHERE (…) AND @fencedsql_claim <=> ? AND FIND_IN_SET(<key>, @fencedsql_claimed) > 0 AND fence_token = ? ORDER BY … LIMIT …
//
// The DELETE then deletes only rows the UPDATE stamped, and the wrapper's count check
// (as many deleted as stamped) makes it delete all of them or fail: exact whatever
// its condition reads, so the clock and ORDER BY … LIMIT, which the unkeyed form
// refuses (Plan.TwoStepErr), run. A selection that reads the fencing columns is still
// refused (the version it names is gone once stamped). The list is scanned once per
// row the DELETE examines: a two-statement DELETE of n rows costs O(n²) in the
// server, which the guard's one statement does not.

// keyDelete gives main, the two-statement DELETE of g (sig[:j] its table, r its
// reference), and its fencing UPDATE (main.Pre) their keyed forms (Plan.Keyed), the
// keyed DELETE refused only for unstable (Plan.TwoStepErr). A DELETE that names a
// user variable has none (it could read or change the record, under any spelling),
// and its two statements are refused.
func (p *parser) keyDelete(main *Plan, g *Table, nUser int, r tableRef, tableStart int, clauses map[string][2]int, j int, versioned bool, unstable error) error {
	if p.namesUserVariable() {
		main.TwoStepErr = unsupported(g.String(), "a DELETE on MySQL/MariaDB that names a user variable (@name), run as two statements (no database-side guard to take it in one, ExpectVersion, or the schema checks off): its fencing UPDATE keeps the rows it stamped in %s and %s; pass the value as an argument, or install the guard", claimListVar, claimNonceVar)
		return nil
	}
	q := p.qualifier(r)
	keyed, err := p.deleteRestricted(g, nUser, clauses, j, q)
	if err != nil {
		return err
	}
	keyed.TwoStepErr, keyed.Returns = unstable, main.Returns
	if keyed.Listed, err = p.deleteRestrictedBy(g, nUser, clauses, j, q, byKeyList); err != nil {
		return err
	}
	keyed.Listed.TwoStepErr, keyed.Listed.Returns = unstable, main.Returns
	main.Keyed = keyed
	main.Pre.Keyed = p.deleteFencing(g, nUser, tableStart, clauses, j, versioned, q)
	return nil
}

// Located DELETEs (PostgreSQL). Without the guard's one statement a PostgreSQL DELETE
// runs as two statements too, and its condition can select differently the second
// time in the same ways (a function reading clock_timestamp(), an aggregate over a
// column a trigger maintains). Its keyed form names the stamped rows by ctid, as a
// claim by row locator does (ClaimedSetting):
//
//	WITH fencedsql_claimed AS (UPDATE t SET … WHERE … RETURNING ctid)
//	    SELECT FROM fencedsql_claimed WHERE (SELECT set_config('fencedsql.claimed', …, true) IS NOT NULL FROM fencedsql_claimed)
//	DELETE FROM t WHERE (…) AND t.ctid = ANY(NULLIF(current_setting('fencedsql.claimed', true), '')::tid[]) AND fence_token = $n
//
// The first statement's rows are the rows stamped (its command tag counts them, as an
// UPDATE's); its condition reads no column of the outer row, so PostgreSQL evaluates
// it once, before the first row, and records the new versions' ctids (an empty list
// when none was stamped). The stamped rows stay locked by the transaction, so their
// versions cannot move before the DELETE, which finds them by a TID scan. A ctid
// names a row only within one physical table: on a partitioned table or an
// inheritance parent (the table's dialect.LocatorChecker verdict, Plan.ClaimLocator)
// the wrapper sends the unkeyed statements.

// stampRecord is the record of the ctids a fencing UPDATE wrote, of the located DELETE
// and of the located plain claim (claimLocatedPlain)
// (ClaimedSetting): a condition true for every row, evaluated once.
const stampRecord = "(SELECT set_config('" + ClaimedSetting + "', COALESCE(array_agg(ctid), '{}')::text, true) IS NOT NULL FROM " + claimedName + ")"

// Rowid DELETEs (SQLite). SQLite's DELETE always runs as two statements; its keyed
// form names the stamped rows by rowid, which the fencing UPDATE returns:
//
//	UPDATE t SET … WHERE … RETURNING _rowid_
//	DELETE FROM t WHERE (…) AND t._rowid_ IN (SELECT value FROM json_each(?)) AND fence_token = ?
//
// The wrapper reads the rowids (as many as were stamped) and binds them to the DELETE
// as a JSON array (ArgStamped). The rowid is named _rowid_, the alias a user column
// is least likely to take (a column called rowid, _rowid_ or oid hides that alias). A
// table whose rowid a statement cannot name so — WITHOUT ROWID, or a column called
// _rowid_ — is the dialect.LocatorChecker's no (Plan.ClaimLocator), and gets the
// unkeyed form; so does a DELETE with ORDER BY or LIMIT (an UPDATE's RETURNING stands
// before them), and a DELETE of a table qualified by an ATTACHed schema (not main or
// temp): json_each is an eponymous virtual table of main, and reading it takes main's
// read lock in the DELETE's transaction. Where that schema is the main file attached
// again (ATTACH of the database's own file), the COMMIT then cannot take the file's
// exclusive lock and fails with SQLITE_BUSY after the busy timeout (red-team rt34c F5);
// which file an alias names is a property of each connection, so the planner keeps the
// keyed form to main and temp. The unkeyed form refuses the selections it cannot
// repeat (Plan.TwoStepErr).

// attachedSchema reports whether r is qualified by a SQLite schema other than main and
// temp (an ATTACH alias).
func (p *parser) attachedSchema(r tableRef) bool {
	if len(r.parts) < 2 {
		return false
	}
	q := p.rw.foldQual(r.parts[len(r.parts)-2])
	return q != "main" && q != "temp"
}

// locatorDelete gives main, the two-statement DELETE of g, and its fencing UPDATE
// their forms keyed by row locator (Plan.Keyed, complete: no key slots) as k says
// (byCtid, byRowid), the DELETE refused only for unstable. A PostgreSQL DELETE naming
// the first statement's WITH query has none, and so has a SQLite DELETE with ORDER BY
// or LIMIT or of an attached schema's table.
func (p *parser) locatorDelete(main *Plan, g *Table, nUser int, r tableRef, tableStart int, clauses map[string][2]int, j int, versioned bool, unstable error, k keying) error {
	switch {
	case k == byCtid && p.namesClaimQuery(),
		k == byRowid && (hasClause(clauses, "ORDER") || hasClause(clauses, "LIMIT")),
		k == byRowid && p.attachedSchema(r):
		return nil
	}
	located, err := p.deleteRestrictedBy(g, nUser, clauses, j, p.qualifier(r), k)
	if err != nil {
		return err
	}
	located.TwoStepErr, located.Returns = unstable, main.Returns
	located.ClaimLocator = true
	// The fencing UPDATE, extended: its placeholders keep their numbers, and its text
	// ends with the last token of its WHERE (no comment after it).
	pre := *p.deleteFencing(g, nUser, tableStart, clauses, j, versioned, "")
	if k == byCtid {
		pre.SQL = "WITH " + claimedName + " AS (" + pre.SQL + " RETURNING ctid) SELECT FROM " + claimedName + " WHERE " + stampRecord
	} else {
		pre.SQL += " RETURNING _rowid_"
		pre.Locators = true
	}
	main.Keyed, main.Pre.Keyed = located, &pre
	return nil
}

package plan

// claimByLocator: PostgreSQL's claim of a locking read with ORDER BY, LIMIT, OFFSET or
// NOWAIT is one UPDATE over the rows the same locking query locks, found by ctid:
//
//	UPDATE t SET … WHERE ctid = ANY(ARRAY(SELECT ctid … FOR UPDATE) || ARRAY(SELECT ctid …))
//	  AND (ctid = ANY(ARRAY(SELECT ctid … FOR UPDATE) || ARRAY(SELECT ctid …))) IS TRUE
//
// A row another transaction updated and committed while the claim waited for its lock
// has a new version at a new ctid, which the UPDATE's snapshot cannot see: the locking
// subquery returns that new ctid, so an UPDATE by it alone misses the row. The unlocked
// subquery (same snapshot) gives the old version's ctid, which the UPDATE can reach; the
// database then re-checks the condition on the newest version (the IS TRUE copy, which
// the TID scan does not consume and so is always re-checked), and that version's ctid
// is among the locked ones exactly when the locking query kept the row. So the claim
// stamps exactly the rows the locking query locked — or fails with ErrFenced when a
// newer token owns one of them — whether or not another transaction committed changes
// to them meanwhile.

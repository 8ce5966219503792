package postgres

// guardFunctionNames returns the names of every function the dialect installs for the
// guarded table name (folded, as fold gives it) — the guard's trigger function
// fencedsql_guard_<t>, the tombstone guard's fencedsql_tombstone_<t>, the absence
// recorder fencedsql_tombclaim_<t>, the one-statement DELETE's fence functions
// fencedsql_fence_<t> and fencedsql_fenced_<t> — and the ones it installs once per
// schema: the floor's sync function (named like its trigger) and the views' refusal
// fencedsql_refuse_write. The one list of them: the guard-writer judgement
// (guardWrites, red-team rt48a F1, F2) counts a body that names any of them as one
// that may drop, replace, rename or hand over a guard.
func guardFunctionNames(name string) []string {
	return []string{guardFunc(name), tombFunc(name), absenceFunc(name), fenceFunc(name), fencedFunc(name), floorSyncTrigger, refuseFunction}
}

package lockclient

import (
	"context"
	"fmt"
	"math"
)

// DefaultFailoverMargin is the margin AdvanceFloor adds by default after a failover or
// restore of a database that holds the lock service's own token source: 2^32, more
// grants than any replication lag window holds, and at most 2^31 failovers before the
// token range (2^63) ends.
const DefaultFailoverMargin uint64 = 1 << 32

// AdvanceFloor is the lock-service half of the database failover procedure (and of a
// restore of the guarded database from a backup) when the lock service's token source
// may have failed over (or been restored) with the database — sqllock with its lease
// table in the guarded database, or in another database of the same replicated
// cluster (red-team rt42f F1). The promoted server's token source then lags: the
// tokens granted on the old primary in the replication lag window are above its
// LastToken, and a floor raised to that LastToken + 1 lets them write, while the
// service grants them again. Nothing on the new primary remembers them, so
// AdvanceFloor jumps over them: it reads the service's LastToken t, raises the
// service's own floor to t + margin (FloorRaiser.RaiseFloor) and returns the service's
// LastToken after the raise, at least t + margin. A database floor of that + 1
// (schema.RaiseTokenFloor, fencedsql-schema -raise-floor) then refuses every token the
// old primary granted — provided fewer than margin grants were lost — and the service
// never grants one of them again.
// A raise of the service's own floor lost with those grants (a switch's jump) is not
// jumped over by a margin: AdvanceFloorAbove takes a lower bound that covers it.
//
// margin 0 is FloorRaiser.LastToken alone (a lock service that did not fail over with
// the database: etcd, Redis, sqllock in a database that was not promoted or restored,
// or one whose grants commit on a synchronous standby). Each call jumps again (it
// cannot tell a second run from a first): every lease granted before it is refused by
// the floor raised from its answer, as with any raise; its holders acquire again. A
// t + margin above math.MaxInt64-1 (no database floor can lie above it) is an error
// wrapping ErrInvalidConfig, before anything is raised: the token range is near its
// end.
func AdvanceFloor(ctx context.Context, f FloorRaiser, margin uint64) (uint64, error) {
	return AdvanceFloorAbove(ctx, f, 0, margin)
}

// AdvanceFloorAbove is AdvanceFloor from a lower bound the caller knows: it raises the
// service's own floor to max(t, atLeast) + margin, t its LastToken, and returns the
// service's LastToken after the raise, at least that (red-team rt59c F2). A restore
// or an asynchronous failover of a database holding the service's token source can
// forget a raise of that source — the switch procedure's jump (README "Switching or
// rebuilding the lock service": another service's answer, last + 2^52), a
// lockfloor -raise, WithMinToken — and no margin sized for lost grants jumps over a
// lost raise. atLeast carries the evidence kept elsewhere: the highest token the
// guarded database holds (fencedsql-schema -max-token, schema.MaxToken: a row, a
// tombstone or a floor above t proves the source went back, and every new holder
// would be fenced on it) and the answer of the last switch, recorded outside the
// database (lockfloor -failover -at-least N, FENCEDSQL_FLOOR_AT_LEAST). The margin is
// added above the bound too: grants the source made after the token the bound names
// are lost the same way. The package imports nothing of fencedsql: the caller (the
// failover hook, deploy/failover/raise-floor.sh) reads the database.
//
// With margin 0 and atLeast at or below t it raises nothing and answers t, as
// AdvanceFloor does. max(t, atLeast) + margin above math.MaxInt64-1 is an error
// wrapping ErrInvalidConfig, before anything is raised.
func AdvanceFloorAbove(ctx context.Context, f FloorRaiser, atLeast, margin uint64) (uint64, error) {
	last, err := f.LastToken(ctx)
	if err != nil {
		return 0, err
	}
	base := max(last, atLeast)
	if base == last && margin == 0 {
		return last, nil
	}
	const top = math.MaxInt64 - 1 // the database floor is the answer + 1, at most 2^63-1
	if base > top || margin > top-base {
		return 0, fmt.Errorf("lockclient: %w: the lock service's last token %d (or the lower bound %d) plus the failover margin %d is above %d: "+
			"the token range is near its end (no floor can be raised above it); use a smaller margin, or move to a new lock service and guarded tables",
			ErrInvalidConfig, last, atLeast, margin, uint64(top))
	}
	if err := f.RaiseFloor(ctx, base+margin); err != nil {
		return 0, err
	}
	after, err := f.LastToken(ctx)
	if err != nil {
		return 0, err
	}
	if after < base+margin {
		return 0, fmt.Errorf("lockclient: %w: the lock service's last token is %d after raising its floor to %d", ErrInvalidConfig, after, base+margin)
	}
	return after, nil
}

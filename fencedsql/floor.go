package fencedsql

import (
	"errors"
	"strconv"
)

// ErrBelowFloor means a write carried a token below the database's token floor: the
// lease was granted before a failover (or before a lock-service switch) raised the
// floor, or the lock service hands out tokens the database has already passed. Nothing
// changed. errors.Is(err, ErrFenced) holds too.
var ErrBelowFloor = errors.New("fencedsql: token below the database's token floor")

// floorHint names the procedure a BelowFloorError points to.
const floorHint = "if this holder's lease predates a failover or a lock-service switch, it is stale: stop writing and acquire again; " +
	"if every new lease gets this error, the lock service issues tokens below the database's: raise its floor above " +
	"`fencedsql-schema -max-token` (lockfloor -raise N; README, \"Switching or rebuilding the lock service\")"

// BelowFloorError is returned when the database-side guard refused a write because its
// token is below the floor. errors.Is(err, ErrBelowFloor) and errors.Is(err, ErrFenced)
// hold; the driver's error stays reachable.
type BelowFloorError struct {
	Table string // the table, when known
	Token uint64 // the token the statement carried (0 outside the wrapper)
	Err   error  // the driver's error
}

func (e *BelowFloorError) Error() string {
	msg := "fencedsql: write"
	if e.Table != "" {
		msg += " to " + e.Table
	}
	if e.Token != 0 {
		msg += " with token " + strconv.FormatUint(e.Token, 10)
	}
	return msg + " refused: the token is below the database's token floor; nothing was changed (" + floorHint + "): " + e.Err.Error()
}

// Unwrap returns ErrBelowFloor, ErrFenced and the driver's error.
func (e *BelowFloorError) Unwrap() []error { return []error{ErrBelowFloor, ErrFenced, e.Err} }

package lockclient

import (
	"context"
	"errors"
	"fmt"
)

// FloorRaiser is implemented by lock services whose tokens can be raised above a
// minimum, which is what moving an application to another lock service, rebuilding one
// (a new etcd cluster, a lost Redis counter, a recreated lease table) or restoring one
// from a backup requires: the guarded database remembers the highest token that wrote
// each row, so a service that starts counting again from a lower number would have every
// new holder fenced, and one restored from an old backup could hand a stale holder a
// token that wins.
//
// The procedure (README, "Switching or rebuilding the lock service"): read the highest
// token the guarded database has accepted (fencedsql-schema -max-token), raise the new
// service's floor above it with RaiseFloor, then raise the database's own floor to the
// service's LastToken + 1 so that any lease of the old service is refused.
type FloorRaiser interface {
	// RaiseFloor makes every token the service issues after RaiseFloor returns strictly
	// greater than min. The floor is kept by the service itself (it survives the restart
	// of any client, and of the service when the service is persistent) and only goes up:
	// a min at or below the current floor or the last token issued changes nothing.
	// Grants made before are unaffected. An unreachable service yields an error wrapping
	// ErrUnavailable.
	RaiseFloor(ctx context.Context, min uint64) error

	// LastToken returns a token t such that every token the service issued before the
	// call is at most t and every token it issues after the call returns is greater than
	// t: the highest token issued so far, or the floor when that is higher. A database
	// floor of t+1 therefore refuses every lease granted before the call.
	LastToken(ctx context.Context) (uint64, error)
}

// ErrNoFloor is returned by Client.RaiseFloor and Client.LastToken when the backend
// does not implement FloorRaiser. It wraps errors.ErrUnsupported.
var ErrNoFloor = fmt.Errorf("lockclient: the lock service has no token floor: %w", errors.ErrUnsupported)

// RaiseFloor raises the token floor of the Client's lock service (see FloorRaiser): every
// token granted after it returns is greater than min. It returns ErrNoFloor when the
// backend cannot.
func (c *Client) RaiseFloor(ctx context.Context, min uint64) error {
	f, ok := c.backend.(FloorRaiser)
	if !ok {
		return ErrNoFloor
	}
	return f.RaiseFloor(ctx, min)
}

// LastToken returns the highest token the Client's lock service has issued, or its
// floor when higher (see FloorRaiser). It returns ErrNoFloor when the backend cannot.
func (c *Client) LastToken(ctx context.Context) (uint64, error) {
	f, ok := c.backend.(FloorRaiser)
	if !ok {
		return 0, ErrNoFloor
	}
	return f.LastToken(ctx)
}

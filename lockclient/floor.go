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
// token the guarded database has accepted (fencedsql-schema -max-token), retire the old
// service (Retirer, which answers its last token) when switching, raise the new
// service's floor above both with RaiseFloor, then raise the database's own floor to the
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
//
// It never answers below a token this Client was granted: when the service answers
// less than the highest token the Client remembers granting for some lock name (the
// names checkTokenAdvancesLocked keeps), the service's token source went back (restored
// from an older snapshot, a lagging replica promoted, its counter set back), and a
// database floor raised from that answer would not refuse that lease. LastToken then
// fails with an error wrapping ErrInvalidConfig, as a grant of that name would: the
// Client does not make up a number in its stead (other Clients may have been granted
// more), the service's floor has to be raised first (red-team rt37c F5).
func (c *Client) LastToken(ctx context.Context) (uint64, error) {
	f, ok := c.backend.(FloorRaiser)
	if !ok {
		return 0, ErrNoFloor
	}
	last, err := f.LastToken(ctx)
	if err != nil {
		return 0, err
	}
	if err := c.behindError("last token", last); err != nil {
		return 0, err
	}
	return last, nil
}

// behindError is the refusal of an answer last of the service (LastToken, Retire) that
// is below a token this Client remembers granting (see LastToken), or nil.
func (c *Client) behindError(op string, last uint64) error {
	key, held, behind := c.aboveLastToken(last)
	if !behind {
		return nil
	}
	return fmt.Errorf("lockclient: %s: %w: the lock service answers %d, below token %d this Client was granted for lock %q: "+
		"the lock service's token source went back (restored from an older snapshot, reset, or its floor deleted); "+
		"raise the service's token floor (FloorRaiser.RaiseFloor, lockfloor -raise) above %d and above the highest token the guarded tables hold",
		op, ErrInvalidConfig, last, held, key, held)
}

// aboveLastToken reports the lock name and token of the highest token this Client
// remembers being granted, when it is above last.
func (c *Client) aboveLastToken(last uint64) (key string, token uint64, behind bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, t := range c.highest {
		if t > last && t > token {
			key, token, behind = k, t, true
		}
	}
	return key, token, behind
}

package lockclient

import "time"

// A lease's local deadline is judged on two clocks, and it has come when either says so.
//
// The monotonic clock (Go's time.Now reading, CLOCK_MONOTONIC on Linux) is immune to
// wall-clock steps, but it does not count the time the machine is suspended, nor, in
// many hypervisors, the time a virtual machine is paused: a holder frozen that way past
// its TTL would wake up trusting a lease the service expired meanwhile (red-team rt42e
// F3). The wall clock keeps counting through a suspend (it is read back from the
// hardware clock or NTP on resume). A wall clock stepped forward only makes the client
// give up earlier, which the guarantees allow; one stepped back is still bounded by the
// monotonic reading. A pause the guest cannot see at all (its wall clock is restored
// as if no time passed) is left to the fencing token, as every pause is in the end.

// wallNow reads the wall clock alone (no monotonic reading): the Client's default wall.
func wallNow() time.Time { return time.Now().Round(0) }

// pastDeadline reports whether a local deadline taken from time.Now (it has both
// readings) has come at now (also from time.Now), on the monotonic or the wall clock.
func (c *Client) pastDeadline(now, deadline time.Time) bool {
	return !now.Before(deadline) || !c.wall().Before(deadline.Round(0))
}

package lockclient

import "time"

// MaxRemembered is maxRemembered, for tests.
const MaxRemembered = maxRemembered

// RememberedTokens returns how many lock names c remembers the highest token of.
func RememberedTokens(c *Client) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.highest)
}

// ServiceContext is serviceContext, for tests.
var ServiceContext = serviceContext

// SetWall replaces c's wall clock (the reading pastDeadline takes beside the monotonic
// one), to stand for time the monotonic clock did not count (a suspended machine).
func SetWall(c *Client, wall func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = wall
}

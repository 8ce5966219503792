package lockclient

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

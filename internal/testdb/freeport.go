package testdb

import (
	"net"
	"testing"
)

// FreePort returns a loopback TCP port that was free when asked, for a test that
// starts a server of its own (a Redis, an etcd member) on it. Another process may take
// it before the server binds; the server's start then fails, and the test with it.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

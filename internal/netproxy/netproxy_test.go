package netproxy

import (
	"bufio"
	"net"
	"slices"
	"testing"
	"time"
)

func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestBlockHoldsAndUnblockDelivers(t *testing.T) {
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	c.Write([]byte("a\n"))
	if l, _ := r.ReadString('\n'); l != "a\n" {
		t.Fatalf("echo = %q", l)
	}
	p.Block()
	c.Write([]byte("b\n"))
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("bytes crossed a blocked proxy")
	}
	p.Unblock()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	// The read that timed out may have consumed nothing; the echo arrives now.
	if l, err := r.ReadString('\n'); err != nil || l != "b\n" {
		t.Fatalf("after Unblock: %q, %v", l, err)
	}
	p.Reset()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("connection survived Reset")
	}
}

// TestUpstreamIsTheServersViewOfTheClient: Upstream lists, for each open connection,
// the address the server sees the client at, and only those connections.
func TestUpstreamIsTheServersViewOfTheClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan string, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			seen <- c.RemoteAddr().String()
			defer c.Close()
		}
	}()
	p, err := New(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.Upstream(); len(got) != 0 {
		t.Fatalf("Upstream with no connection = %v", got)
	}
	var want []string
	for range 2 {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		select {
		case a := <-seen:
			want = append(want, a)
		case <-time.After(5 * time.Second):
			t.Fatal("the server saw no connection")
		}
	}
	got := p.Upstream()
	for deadline := time.Now().Add(5 * time.Second); len(got) < len(want) && time.Now().Before(deadline); got = p.Upstream() {
		time.Sleep(10 * time.Millisecond) // the proxy tracks its dialed connection after the server accepted it
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Upstream = %v; the server saw its clients at %v", got, want)
	}
}

package netproxy

import (
	"bufio"
	"net"
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

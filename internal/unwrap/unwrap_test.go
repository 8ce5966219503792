package unwrap

import (
	"database/sql/driver"
	"testing"
)

type rawConn struct{ driver.Conn }

type wrapConn struct {
	driver.Conn
	inner driver.Conn
}

func (w wrapConn) Raw() driver.Conn { return w.inner }

type loopConn struct{ driver.Conn }

func (l *loopConn) Raw() driver.Conn { return l }

func TestConn(t *testing.T) {
	base := &rawConn{}
	two := wrapConn{inner: wrapConn{inner: base}}
	if got := Conn(two); got != base {
		t.Fatalf("Conn(two layers) = %#v, want the base connection", got)
	}
	if got := Conn(base); got != base {
		t.Fatalf("Conn(base) = %#v, want it unchanged", got)
	}
	nilInner := wrapConn{}
	if got := Conn(nilInner); got != any(nilInner) {
		t.Fatalf("Conn(Raw() == nil) = %#v, want the wrapper itself", got)
	}
	if got := Conn("not a conn"); got != "not a conn" {
		t.Fatalf("Conn(string) = %#v", got)
	}
	l := &loopConn{}
	if got := Conn(l); got != l { // terminates
		t.Fatalf("Conn(self loop) = %#v", got)
	}
}

type baseDriver struct{}

func (*baseDriver) Open(string) (driver.Conn, error) { return nil, nil }

type wrapDriver struct {
	driver.Driver
	inner driver.Driver
}

func (w *wrapDriver) Unwrap() driver.Driver { return w.inner }

func TestDriver(t *testing.T) {
	base := &baseDriver{}
	two := &wrapDriver{inner: &wrapDriver{inner: base}}
	if got := Driver(two); got != base {
		t.Fatalf("Driver(two layers) = %#v, want the base driver", got)
	}
	if got := Driver(base); got != base {
		t.Fatalf("Driver(base) = %#v, want it unchanged", got)
	}
	nilInner := &wrapDriver{}
	if got := Driver(nilInner); got != nilInner {
		t.Fatalf("Driver(Unwrap() == nil) = %#v, want the wrapper itself", got)
	}
	self := &wrapDriver{}
	self.inner = self
	if got := Driver(self); got != self { // terminates
		t.Fatalf("Driver(self loop) = %#v", got)
	}
}

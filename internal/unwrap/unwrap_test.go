package unwrap

import (
	"database/sql/driver"
	"testing"

	"github.com/XSAM/otelsql"
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

type openDriver struct{ conn driver.Conn }

func (d openDriver) Open(string) (driver.Conn, error) { return d.conn, nil }

// ConnForwarded peels like Conn, and says whether every layer peeled off is a known
// forwarder (otelsql's connection): a layer of unknown code may run its own
// ResetSession (red-team rt45c F5, F6).
func TestConnForwarded(t *testing.T) {
	base := &rawConn{}
	if got, ok := ConnForwarded(base); got != base || !ok {
		t.Errorf("ConnForwarded(base) = %#v, %v; want it, true", got, ok)
	}
	if got, ok := ConnForwarded(wrapConn{inner: base}); got != base || ok {
		t.Errorf("ConnForwarded(own layer) = %#v, %v; want the base, false", got, ok)
	}
	if _, ok := ConnForwarded(wrapConn{}); ok {
		t.Error("ConnForwarded(Raw() == nil): forwarded")
	}
	if _, ok := ConnForwarded(&loopConn{}); ok {
		t.Error("ConnForwarded(self loop): forwarded")
	}
	ot, err := otelsql.WrapDriver(openDriver{base}).Open("")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := ConnForwarded(ot); got != base || !ok {
		t.Errorf("ConnForwarded(otelsql's %T) = %#v, %v; want the base, true", ot, got, ok)
	}
	if got, ok := ConnForwarded(wrapConn{inner: ot}); got != base || ok {
		t.Errorf("ConnForwarded(own layer over otelsql's) = %#v, %v; want the base, false", got, ok)
	}
	ot2, _ := otelsql.WrapDriver(openDriver{wrapConn{inner: base}}).Open("")
	if got, ok := ConnForwarded(ot2); got != base || ok {
		t.Errorf("ConnForwarded(otelsql's over own layer) = %#v, %v; want the base, false", got, ok)
	}
}

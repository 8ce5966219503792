package etcdserver

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// drainTimeout bounds how long Kill waits for requests in flight before it stops the
// server anyway.
const drainTimeout = 10 * time.Second

// gate admits a member's client requests until it is shut, and lets Kill wait for the
// ones in flight. etcd answers a read (Range, a read-only Txn) in the gRPC handler's
// goroutine, straight from its backend; stopping the server closes that backend, and a
// read still running then crashes the whole process (etcd-io/etcd#17223). Kill therefore
// shuts the gate first — a new request fails with Unavailable, as one sent to a crashed
// member fails — waits until the handlers in flight have returned, and only then stops
// raft and the backend. A stream counts as in flight from each message it receives
// until it asks for the next one.
type gate struct {
	mu     sync.Mutex
	shut   bool
	flight int // requests in flight, guarded by mu
}

var errKilled = status.Error(codes.Unavailable, "etcdserver: member killed")

// enter admits one request, or reports false when the gate is shut.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		return false
	}
	g.flight++
	return true
}

// leave ends one request admitted by enter.
func (g *gate) leave() {
	g.mu.Lock()
	g.flight--
	g.mu.Unlock()
}

// close shuts the gate and waits (at most drainTimeout) for the requests in flight. It
// polls rather than parks a goroutine on them: a handler stuck on a killed member's
// storage must not leave a goroutine of ours behind.
func (g *gate) close() {
	deadline := time.Now().Add(drainTimeout)
	for {
		g.mu.Lock()
		g.shut = true
		n := g.flight
		g.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// options are the server options that route every client request through the gate.
func (g *gate) options() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if !g.enter() {
				return nil, errKilled
			}
			defer g.leave()
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if !g.enter() {
				return errKilled
			}
			s := &gatedStream{ServerStream: ss, g: g, held: true}
			defer s.end()
			return h(srv, s)
		}),
	}
}

// gatedStream holds the gate while its handler works on a received message.
type gatedStream struct {
	grpc.ServerStream
	g    *gate
	mu   sync.Mutex
	held bool
	done bool // the handler returned: a message received now is no work in flight
}

// end releases the gate when the handler returns, for good: a receiving goroutine of
// the handler's (etcd's watch and keep-alive streams receive in their own goroutine)
// may still get a message after that, and holding the gate for it would never be
// released — Kill and Close then waited the whole drainTimeout.
func (s *gatedStream) end() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	s.release()
}

func (s *gatedStream) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		s.held = false
		s.g.leave()
	}
}

func (s *gatedStream) RecvMsg(m any) error {
	s.release() // waiting for a message is not work in flight
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil
	}
	if !s.g.enter() {
		return errKilled
	}
	s.held = true
	return nil
}

package etcdserver

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// TestKillUnderReads kills a member again and again while clients read from it as fast
// as they can. Stopping a server whose backend still serves a read crashes the process
// (etcd-io/etcd#17223), so without the gate this test dies with a nil dereference in
// bbolt within a few kills.
func TestKillUnderReads(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts an etcd member repeatedly (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Members: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli, err := clientv3.New(ClientConfig(c.AllEndpoints()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	for round := range 8 {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
					cli.Get(rctx, "k", clientv3.WithSerializable()) // errors expected once killed
					cli.Get(rctx, "k")
					rcancel()
				}
			}()
		}
		time.Sleep(50 * time.Millisecond)
		c.Kill(0)
		time.Sleep(50 * time.Millisecond)
		close(stop)
		wg.Wait()
		if err := c.Restart(ctx, 0); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// recvStream is a grpc.ServerStream whose RecvMsg returns at once.
type recvStream struct{ grpc.ServerStream }

func (recvStream) RecvMsg(any) error { return nil }

// A message received after the stream's handler returned (etcd receives on watch and
// keep-alive streams in a goroutine of its own) is not work in flight: it used to hold
// the gate for good, and every later Kill and Close waited the whole drainTimeout
// (seen as a 10 s tail after the lock backends' fault schedules).
func TestGateReleasedForMessageAfterHandlerReturned(t *testing.T) {
	g := &gate{}
	if !g.enter() {
		t.Fatal("gate shut")
	}
	s := &gatedStream{ServerStream: recvStream{}, g: g, held: true}
	if err := s.RecvMsg(nil); err != nil { // a message the handler works on
		t.Fatal(err)
	}
	// The handler returns; its receiving goroutine then gets one more message.
	s.end()
	if err := s.RecvMsg(nil); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	n := g.flight
	g.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d requests in flight after the handler returned, want 0", n)
	}
}

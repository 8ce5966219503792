package etcdlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// Invalid values given to New are reported, not replaced by defaults: CheckConfig,
// lockclient.NewChecked and Open return an error wrapping lockclient.ErrInvalidConfig
// that names the option and the value, and a Client's Acquire fails with it at once.
// None of these calls contacts etcd (the client points at a closed port).
func TestInvalidOptions(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, option, value string
		cli                 *clientv3.Client
		opts                []etcdlock.Option
	}{
		{"negative slack", "WithLeaseSlack", "-1s", cli, []etcdlock.Option{etcdlock.WithLeaseSlack(-time.Second)}},
		{"empty prefix", "WithPrefix", "empty", cli, []etcdlock.Option{etcdlock.WithPrefix("")}},
		{"nil client", "New", "nil", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := etcdlock.New(tc.cli, tc.opts...)
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
					t.Fatalf("%s = %v, want ErrInvalidConfig and not ErrUnavailable", what, err)
				}
				if !strings.Contains(err.Error(), tc.option) || !strings.Contains(err.Error(), tc.value) {
					t.Fatalf("%s error %q does not name %s and %s", what, err, tc.option, tc.value)
				}
			}
			check("CheckConfig", b.CheckConfig())
			c, err := lockclient.NewChecked(b)
			check("NewChecked", err)
			defer c.Close(ctx)
			start := time.Now()
			_, err = c.Acquire(ctx, "k")
			check("Acquire", err)
			_, err = c.TryAcquire(ctx, "k")
			check("TryAcquire", err)
			_, err = b.Open(ctx, "o", time.Second)
			check("Open", err)
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Fatalf("took %v: want at once", d)
			}
		})
	}
	// Valid edge values.
	b := etcdlock.New(cli, etcdlock.WithLeaseSlack(0), etcdlock.WithRequestTimeout(0), etcdlock.WithPrefix("/p/"))
	if err := b.CheckConfig(); err != nil {
		t.Fatalf("CheckConfig of valid options = %v", err)
	}
}

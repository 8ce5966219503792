package redislock

import (
	"context"

	"github.com/fencedsql/fencedsql/lockclient"
)

// TryAcquireRequest makes the grant request req of session s, as a retry of the same
// request would.
func TryAcquireRequest(ctx context.Context, s lockclient.Session, key, req string) (lockclient.Grant, error) {
	return s.(*session).tryAcquire(ctx, key, req)
}

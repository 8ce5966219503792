package memlock_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestWithMinTokenRepeatedKeepsHighest (red-team rt62c): options assembled from
// defaults and overrides — WithMinToken(M), then WithMinToken(0) or a lower one — keep
// the highest floor; floors only go up.
func TestWithMinTokenRepeatedKeepsHighest(t *testing.T) {
	svc := memlock.New(memlock.WithMinToken(500), memlock.WithMinToken(0), memlock.WithMinToken(7))
	if n, err := svc.LastToken(context.Background()); err != nil || n != 500 {
		t.Fatalf("LastToken with WithMinToken(500), WithMinToken(0), WithMinToken(7) = %d, %v; want 500", n, err)
	}
}

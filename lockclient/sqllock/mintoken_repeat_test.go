package sqllock_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestWithMinTokenRepeatedKeepsHighest (red-team rt62c): options assembled from
// defaults and overrides — WithMinToken(M), then WithMinToken(0) — keep M; floors only
// go up.
func TestWithMinTokenRepeatedKeepsHighest(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, _ := srv.fresh(t, "")
		b, err := sqllock.New(srv.open(t, dsn), sqllock.WithMinToken(700), sqllock.WithMinToken(0))
		if err != nil {
			t.Fatal(err)
		}
		if tok := grantOne(t, openSession(t, b), "k"); tok <= 700 {
			t.Fatalf("first token %d with WithMinToken(700), WithMinToken(0); want above 700", tok)
		}
	})
}

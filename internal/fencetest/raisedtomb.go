package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
)

// RaisedTombstone is the oracle of a transaction's raised token: the row of id key in
// table kid, stamped under a lease l1, was deleted (by a cascade, a cross-partition
// move: not by a fenced DELETE of it) in a transaction after a lease l3 joined it, and
// l1 < l2 < l3. The row's tombstone, read through raw in tombTable, must be at least
// l3, and the row's INSERT under l2, sent by exec, must fail with ErrFenced: a row the
// transaction deleted under l3 does not come back under an older token. It returns nil
// when both hold, else an error that says what was seen.
func RaisedTombstone(raw *sql.DB, tombTable string, exec func(ctx context.Context, query string) error, key int, l2, l3 *lockclient.Lease) error {
	var tomb uint64
	if err := raw.QueryRow(fmt.Sprintf("SELECT fence_token FROM %s WHERE id = %d", tombTable, key)).Scan(&tomb); err != nil {
		return fmt.Errorf("the tombstone of kid %d: %w", key, err)
	}
	ins := fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, NULL)", key)
	err := exec(fencedsql.WithLease(context.Background(), l2), ins)
	if tomb < l3.Token() || !errors.Is(err, fencedsql.ErrFenced) {
		return fmt.Errorf("kid %d deleted after lease %d joined the transaction: tombstone %d; %s under stale %d: %v — want a tombstone >= %d and ErrFenced (a deleted row came back under an older token)",
			key, l3.Token(), tomb, ins, l2.Token(), err, l3.Token())
	}
	return nil
}

// ExecOf is exec for RaisedTombstone through db.
func ExecOf(db *sql.DB) func(ctx context.Context, query string) error {
	return func(ctx context.Context, query string) error {
		_, err := db.ExecContext(ctx, query)
		return err
	}
}

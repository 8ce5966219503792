// The test double's batch results, answered from the expectations in order.

package fencedpgxtest

import (
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// batchResults answers a batch item by item; after the first error every later result
// reports it, as pgx's do.
type batchResults struct {
	items []*Expectation
	i     int
	err   error
}

func (br *batchResults) nextItem() (*Expectation, error) {
	if br.err != nil {
		return nil, br.err
	}
	if br.i >= len(br.items) {
		return nil, errors.New("no more results in batch")
	}
	x := br.items[br.i]
	br.i++
	if x.err != nil {
		br.err = x.err
		return nil, x.err
	}
	return x, nil
}

func (br *batchResults) Exec() (pgconn.CommandTag, error) {
	x, err := br.nextItem()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return x.tag, nil
}

func (br *batchResults) Query() (pgx.Rows, error) {
	x, err := br.nextItem()
	if err != nil {
		return &Rows{err: err}, err
	}
	return &Rows{cols: x.cols, rows: x.rows, i: -1}, nil
}

func (br *batchResults) QueryRow() pgx.Row {
	rows, _ := br.Query()
	return mockRow{rows}
}

func (br *batchResults) Close() error {
	for br.err == nil && br.i < len(br.items) {
		_, _ = br.Exec()
	}
	return br.err
}

func (br *batchResults) Tx() pgx.Tx { return nil }

package fencedsql

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// Listed DELETEs. A keyed DELETE (MySQL/MariaDB) is restricted to the rows its
// fencing UPDATE recorded by a search of the session's record per row it examines:
// over n rows that is O(n²) in the server, seconds at ten thousand rows. When the
// UPDATE stamped more than listFrom rows, the wrapper reads the record instead (one
// round trip) and deletes by its keys in lists of listChunk (plan.Plan.Listed), which
// the server searches by bisection: as exact — each DELETE is restricted to keys the
// UPDATE recorded, and together they must delete as many rows as it stamped — at a
// round trip per listChunk rows.
const (
	listFrom  = 256
	listChunk = 512
)

// deleteListed runs the keyed DELETE del, whose fencing UPDATE stamped stamped rows,
// as its listed form: it reads the record (plan.KeyedRecordQuery), which must be this
// statement's (the connection's current nonce) and hold stamped keys, then deletes by
// lists of them. It returns the rows deleted in all; user are the caller's arguments.
func (c *conn) deleteListed(ctx context.Context, r runner, del *plan.Plan, user []driver.NamedValue, tok uint64, ver int64, stamped int64) (driver.Result, error) {
	ts, ok := c.core.dialect.(dialect.Tombstoner)
	if !ok {
		return nil, fmt.Errorf("fencedsql: a listed DELETE on a dialect without primary key queries")
	}
	cols, err := c.rowKey(ctx, ts, del.Guard)
	if err != nil {
		return nil, err
	}
	listed, err := c.core.keyedForm(del.Listed, cols)
	if err != nil {
		return nil, err
	}
	vals, err := c.queryStrings(ctx, plan.KeyedRecordQuery, nil)
	if err != nil {
		return nil, err
	}
	if len(vals) != 1 || len(vals[0]) != 2 || vals[0][0] != strconv.FormatInt(c.claimSeq, 10) {
		return nil, &UnsupportedError{Table: del.Guard.String(), Reason: "the keyed DELETE's record is not its fencing UPDATE's (a routine or trigger changed the session's @fencedsql_ variables)"}
	}
	keys := strings.Split(strings.Trim(vals[0][1], ","), ",")
	if int64(len(keys)) != stamped {
		return nil, inexactError(del, "DELETE's record", stamped, int64(len(keys)), true)
	}
	var n int64
	for len(keys) > 0 {
		part := keys[:min(listChunk, len(keys))]
		keys = keys[len(part):]
		args, err := bind(listed, user, tok, ver)
		if err != nil {
			return nil, err
		}
		k := 0
		for i, a := range listed.Args {
			if a == plan.ArgKeyItem {
				key := part[min(k, len(part)-1)] // the last one again, to fill the list
				if args[i].Value, err = listedKey(listed, key); err != nil {
					return nil, err
				}
				k++
			}
		}
		res, err := r.exec(ctx, listed, args)
		if err != nil {
			return nil, err
		}
		d, ok := affected(res)
		if !ok {
			return nil, fmt.Errorf("fencedsql: the driver cannot say how many rows a DELETE deleted")
		}
		n += d
	}
	return counted(n), nil
}

// listedKey returns key, a key text of the record, as listed binds it: an integer where
// the key is one integer column (plan.Plan.ListInts), the text otherwise.
func listedKey(listed *plan.Plan, key string) (any, error) {
	if !listed.ListInts {
		return key, nil
	}
	if v, err := strconv.ParseInt(key, 10, 64); err == nil {
		return v, nil
	}
	v, err := strconv.ParseUint(key, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("fencedsql: the keyed DELETE's record holds %q for an integer key", key)
	}
	return v, nil
}

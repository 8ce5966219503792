package etcdlock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/lockclient"
)

// The token floor (see "Token floor" in the package documentation): every token is
// offset + revision, where offset is the value of the floor key as of the granting
// write's revision. The offset only goes up, so tokens increase with the revision.

// maxFloor bounds RaiseFloor's min so that offset + revision stays far from overflow.
const maxFloor = 1 << 62

// FloorKey returns the etcd key that holds the token floor's offset: <prefix>~floor
// (no lock's key: those are <prefix><escaped name>/<lease>).
func (b *Backend) FloorKey() string { return b.cfg.prefix + "~floor" }

// floorGet is the read of the floor key that every granting transaction includes.
func (b *Backend) floorGet() clientv3.Op { return clientv3.OpGet(b.FloorKey()) }

// floorKV returns the floor key from the answer of a floorGet, nil when it does not exist.
func floorKV(r *etcdserverpb.ResponseOp) *mvccpb.KeyValue {
	if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
		return kvs[0]
	}
	return nil
}

// retiredMark starts the value of the floor key of a retired service (Retire):
// "retired:<offset>", the offset in force until the retirement plus
// lockclient.RetirementMargin (none when written by an earlier release). It is no offset, so
// every grant — of this release, which names it (lockclient.ErrRetired), or of an
// earlier one, which refuses any value that is no offset — fails.
const retiredMark = "retired:"

// parseOffset reads the offset of a floor key (0 when it does not exist); a value that
// is no offset is an error wrapping lockclient.ErrInvalidConfig, and the mark of a
// retired service (retiredMark) one wrapping lockclient.ErrRetired.
func (b *Backend) parseOffset(kv *mvccpb.KeyValue) (uint64, error) {
	if kv == nil {
		return 0, nil
	}
	if _, ok := b.retiredOffset(kv); ok {
		return 0, fmt.Errorf("etcdlock: the floor key %s holds %q: %w", b.FloorKey(), kv.Value, lockclient.ErrRetired)
	}
	off, err := strconv.ParseUint(string(kv.Value), 10, 64)
	if err != nil || off > maxFloor {
		// A configuration error, not an outage: no retry passes (red-team rt28b F7).
		return 0, fmt.Errorf("etcdlock: %w: the floor key %s holds %q, not a token offset (a decimal integer of at most %d); "+
			"put the offset of the last raise back (or RaiseFloor above the highest token granted so far) after deleting it",
			lockclient.ErrInvalidConfig, b.FloorKey(), kv.Value, uint64(maxFloor))
	}
	return off, nil
}

// offsetAt returns the offset in force at revision rev, given the floor key as read at a
// revision at least rev (kv, nil when absent; known false when it was not read). When
// the key was written after rev, its value at rev is read (WithRev), which fails if etcd
// compacted that revision away.
func (b *Backend) offsetAt(ctx context.Context, cli *clientv3.Client, rev int64, kv *mvccpb.KeyValue, known bool) (uint64, error) {
	if known && (kv == nil || kv.ModRevision <= rev) {
		return b.grantOffset(kv)
	}
	reqCtx, cancel := b.requestContext(ctx)
	defer cancel()
	resp, err := cli.Get(reqCtx, b.FloorKey(), clientv3.WithRev(rev))
	if err != nil {
		return 0, unavailable(ctx, "read the token floor", err)
	}
	if len(resp.Kvs) == 0 {
		return b.grantOffset(nil)
	}
	return b.grantOffset(resp.Kvs[0])
}

// token is the fencing token of a grant made at revision rev under offset off.
func token(off uint64, rev int64) uint64 { return off + uint64(rev) }

var _ lockclient.FloorRaiser = (*Backend)(nil)

// RaiseFloor implements lockclient.FloorRaiser. The offset itself becomes at least min
// (raiseOffsetTo: nothing changes when it is min or more; otherwise it is set to min by
// compare-and-swap on the floor key's mod revision, retried when a concurrent raise
// won — or, when the floor key is missing, to the clock in microseconds plus min,
// raiseSeed, as WithMinToken seeds it: red-team rt49e F1), so it only goes up and every
// later grant gets a token of at least min plus a revision, above min whatever the
// revision. Every grant reads the offset in its own
// transaction, so a grant ordered after the raise's write by etcd's revision gets a
// token above min. The offset is not min − H (H the current revision, the least that
// puts the next token above min), as it was before red-team rt46d F1: a raise is then
// as safe to repeat after the prefix lost its data as WithMinToken — the same raise
// puts the offset back at least where it was, and in a live cluster every later
// revision is above every one before, so the tokens are above every token granted under
// it before the loss — where min − H' (H' the revision at the repeat) priced them below
// those; a rebuilt cluster, whose revision restarted, is covered by the clock seed of a
// missing key (given a clock ahead of the previous seed's by more than the lost
// cluster's revision count in µs). The cost is
// a jump of the revision, once per raise that writes. A min above 2^62 yields an
// error wrapping lockclient.ErrInvalidConfig; a retired service one wrapping
// lockclient.ErrRetired; an unreachable cluster one wrapping ErrUnavailable.
func (b *Backend) RaiseFloor(ctx context.Context, min uint64) error {
	if b.cfg.err != nil {
		return b.cfg.err
	}
	if min > maxFloor {
		return fmt.Errorf("etcdlock: raise floor: %w: the floor must be at most %d, got %d", lockclient.ErrInvalidConfig, uint64(maxFloor), min)
	}
	return b.raiseOffsetTo(ctx, func(off uint64, missing bool) (uint64, error) {
		if missing {
			return raiseSeed(min, time.Now()), nil
		}
		return min, nil
	})
}

// raiseOffsetTo sets the floor key's offset to target(off, missing) if that is above the
// offset off found (0 and missing when the key does not exist), by compare-and-swap on
// the key's mod revision, retried (target asked again) when a concurrent raise won, so
// the offset only goes up (RaiseFloor, WithMinToken's seed). A retired service is refused (lockclient.ErrRetired),
// a floor key that holds no offset too (ErrInvalidConfig), and target's error is returned.
func (b *Backend) raiseOffsetTo(ctx context.Context, target func(off uint64, missing bool) (uint64, error)) error {
	for {
		kv, _, err := b.readFloor(ctx, "raise floor")
		if err != nil {
			return err
		}
		off, err := b.parseOffset(kv)
		if err != nil {
			return err
		}
		n, err := target(off, kv == nil)
		if err != nil {
			return err
		}
		if off >= n {
			return nil
		}
		mod := int64(0)
		if kv != nil {
			mod = kv.ModRevision
		}
		reqCtx, cancel := b.requestContext(ctx)
		tr, err := b.cli.Txn(reqCtx).
			If(clientv3.Compare(clientv3.ModRevision(b.FloorKey()), "=", mod)).
			Then(clientv3.OpPut(b.FloorKey(), strconv.FormatUint(n, 10))).
			Commit()
		cancel()
		if err != nil {
			return unavailable(ctx, "raise floor", err)
		}
		if tr.Succeeded {
			return nil
		}
	}
}

// readFloor reads the floor key (nil when it is not set) and the store's revision at
// that read, in one linearizable Get; op names the operation in an unreachable
// service's error.
func (b *Backend) readFloor(ctx context.Context, op string) (*mvccpb.KeyValue, int64, error) {
	reqCtx, cancel := b.requestContext(ctx)
	defer cancel()
	resp, err := b.cli.Get(reqCtx, b.FloorKey())
	if err != nil {
		return nil, 0, unavailable(ctx, op, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, resp.Header.Revision, nil
	}
	return resp.Kvs[0], resp.Header.Revision, nil
}

// LastToken implements lockclient.FloorRaiser: the offset plus the current revision, read
// together (one linearizable read). Every grant before it was made at a revision at most
// that one under an offset at most this one; every grant after, at a higher revision.
func (b *Backend) LastToken(ctx context.Context) (uint64, error) {
	if b.cfg.err != nil {
		return 0, b.cfg.err
	}
	kv, rev, err := b.readFloor(ctx, "last token")
	if err != nil {
		return 0, err
	}
	if last, ok := b.retiredLast(kv); ok {
		return last, nil
	}
	off, err := b.parseOffset(kv)
	if err != nil {
		return 0, err
	}
	// An offset not seeded for WithMinToken (a missing floor key included: the prefix or the
	// cluster lost its data): this Backend's grants never use it — the next one seeds
	// the offset at the clock plus WithMinToken first (grantOffset, restoreMinToken,
	// seedOffset), which bounds the tokens issued before the loss — so the answer is
	// counted from that seed, at this read's clock (red-team rt45d F1, rt46d F1, rt49e F1).
	off, err = b.seedOffset(off, time.Now())
	if err != nil {
		return 0, err
	}
	return token(off, rev), nil
}

var _ lockclient.RetirementReader = (*Backend)(nil)

// Retired implements lockclient.RetirementReader: whether the floor key holds the mark
// of a retired service (retiredMark) and, if so, the last token Retire answered, read
// with one linearizable Get of the floor key, as LastToken reads it. It writes nothing.
func (b *Backend) Retired(ctx context.Context) (uint64, bool, error) {
	if b.cfg.err != nil {
		return 0, false, b.cfg.err
	}
	kv, _, err := b.readFloor(ctx, "retired")
	if err != nil {
		return 0, false, err
	}
	last, ok := b.retiredLast(kv)
	return last, ok, nil
}

// retiredOffset reads the offset of the mark of a retired service (retiredMark); ok is
// false when kv holds no such mark (a mark whose offset is unreadable is no mark: it is
// refused as a value that is no offset).
func (b *Backend) retiredOffset(kv *mvccpb.KeyValue) (off uint64, ok bool) {
	v, found := strings.CutPrefix(string(kv.Value), retiredMark)
	if !found {
		return 0, false
	}
	off, err := strconv.ParseUint(v, 10, 64)
	if err != nil || off > maxFloor {
		return 0, false
	}
	return off, true
}

// retiredLast is the last token of a retired service, from its floor key kv: the mark
// was written at kv.ModRevision under the offset it keeps, which was in force for every
// grant before (the mark's write was a compare-and-swap on the key), so every token
// issued is at most offset + ModRevision − 1.
func (b *Backend) retiredLast(kv *mvccpb.KeyValue) (uint64, bool) {
	if kv == nil {
		return 0, false
	}
	off, ok := b.retiredOffset(kv)
	if !ok {
		return 0, false
	}
	return token(off, kv.ModRevision-1), true
}

var _ lockclient.Retirer = (*Backend)(nil)

// Retire implements lockclient.Retirer: it replaces the floor key's offset o by the mark
// "retired:<o + m>" (retiredMark, m = lockclient.RetirementMargin, o + m at most
// 2^62), by compare-and-swap on the key's mod revision (retried when a concurrent raise
// won). Every granting transaction reads the floor key, so a grant ordered after the
// mark by etcd's revision fails with an error wrapping lockclient.ErrRetired (its key is
// given back, as for any floor that is no offset), and one ordered before got offset o.
// It returns o + m plus the mark's revision minus one, which bounds every token issued
// (LastToken and Retired answer the same afterwards). A service already retired is left
// alone. Through a Backend with WithMinToken, o is seeded (seedOffset): a lower offset
// (a prefix or a cluster that lost its data) is one its grants never use — they seed it
// first (grantOffset) — and the seed bounds the tokens issued before the loss. The mark is
// the floor key under the prefix: deleting the prefix, or restoring
// the cluster from before Retire, removes it and the service grants again — tokens of
// the cluster's revision (plus o after a restore), which stay below the returned bound
// until the cluster has made m more writes, where before the margin a cluster shared
// with other writers soon passed it (see lockclient.Retirer; red-team rt38b F1b, rt44c
// F2). A service retired by an earlier release keeps its mark without the margin.
func (b *Backend) Retire(ctx context.Context) (uint64, error) {
	if b.cfg.err != nil {
		return 0, b.cfg.err
	}
	for {
		kv, _, err := b.readFloor(ctx, "retire")
		if err != nil {
			return 0, err
		}
		if last, ok := b.retiredLast(kv); ok {
			return last, nil
		}
		off, err := b.parseOffset(kv)
		if err != nil {
			return 0, err
		}
		if kv == nil && b.cfg.minToken == 0 {
			if err := b.requireState(ctx); err != nil {
				return 0, err
			}
		}
		// What this Backend's grants put a lower offset back to (grantOffset, seedOffset).
		if off, err = b.seedOffset(off, time.Now()); err != nil {
			return 0, err
		}
		mod := int64(0)
		if kv != nil {
			mod = kv.ModRevision
		}
		marked := min(off+lockclient.RetirementMargin, maxFloor) // off <= maxFloor: no overflow
		reqCtx, cancel := b.requestContext(ctx)
		tr, err := b.cli.Txn(reqCtx).
			If(clientv3.Compare(clientv3.ModRevision(b.FloorKey()), "=", mod)).
			Then(clientv3.OpPut(b.FloorKey(), retiredMark+strconv.FormatUint(marked, 10))).
			Commit()
		cancel()
		if err != nil {
			return 0, unavailable(ctx, "retire", err)
		}
		if tr.Succeeded {
			return token(marked, tr.Header.Revision-1), nil
		}
	}
}

// requireState is Retire's check on a prefix without a floor key, for a Backend without
// WithMinToken: the service identity key (written by the first Open of any process)
// must exist. A prefix with neither was never used — or lost its data, the floor key
// and its offset with it, and then nothing bounds the tokens it issued: Retire fails
// with an error wrapping lockclient.ErrUnavailable and marks nothing, rather than answer
// a "last token" below them (red-team rt45d F2). One more read, on this rare path only.
func (b *Backend) requireState(ctx context.Context) error {
	reqCtx, cancel := b.requestContext(ctx)
	defer cancel()
	resp, err := b.cli.Get(reqCtx, b.ServiceIDKey(), clientv3.WithCountOnly())
	if err != nil {
		return unavailable(ctx, "retire", err)
	}
	if resp.Count > 0 {
		return nil
	}
	return fmt.Errorf("etcdlock: retire: %w: counter lost: the prefix %q holds neither the floor key %s nor the service identity %s: "+
		"a service never used, or one whose data was lost (with its offset), so no value is known to bound the tokens it issued; "+
		"stop its holders for one TTL and raise the next service with lockfloor above the highest token it may have issued, "+
		"or retire through a Backend configured with the service's WithMinToken",
		lockclient.ErrUnavailable, b.cfg.prefix, b.FloorKey(), b.ServiceIDKey())
}

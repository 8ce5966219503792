package etcdlock

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/lockclient"
)

// A session's identity (lockclient.ServiceIdentifier) names the token source: the etcd
// cluster, whose revision every token counts, and the prefix, under which the floor
// key added to it lives (Backend.FloorKey), and a random value stored beside the floor
// key, in <prefix>~service-id (Backend.ServiceIDKey): "etcd:<cluster id>:<prefix>:<stored
// value>". The first Open of any process on a fresh prefix draws the value (a
// transaction that puts it only if the key was never created), every later one reads
// it; it is read once per Backend (one round trip at its first Open, cached), not per
// grant.
//
// etcd's cluster id alone is no identity of a token counter: etcd derives it from the
// members' names, advertised peer URLs and --initial-cluster-token, so every cluster
// bootstrapped from one configuration (two environments of one manifest, every
// single-node etcd left at its defaults, the old and the new cluster of a rebuild) has
// the same one, while each counts its own revisions (red-team rt44c F1). The stored
// value tells them apart; give each cluster its own --initial-cluster-token anyway.
//
// The value lives in the cluster's data, so it follows the data:
//   - a cluster restored from a snapshot (etcdutl snapshot restore) keeps it: one
//     lineage of revisions, one service. A restore run beside the original as a second
//     live service answers the same identity: do not (see "Switching or rebuilding the
//     lock service" in the README — a switch starts the new service fresh);
//   - a prefix wiped (etcdctl del --prefix) loses it with the floor key: the next
//     Backend to open draws a new value, while Backends already open keep answering the
//     one they cached. Leases of the two then differ in identity and fencedsql refuses
//     to bind them together (fail closed): restart the processes after wiping a prefix
//     that is still in use — or, better, never wipe one (a wiped floor key also drops
//     the offset and a retirement; see Backend.Retire).
//
// A prefix kept apart only by a namespace wrapper around the etcd client
// (namespace.NewKV) is not seen by the prefix part, but the stored value lives under the
// namespace, so two namespaces answer two identities.

var _ lockclient.ServiceIdentifier = (*session)(nil)

// ServiceIDKey returns the etcd key that holds the random part of the service's
// identity: <prefix>~service-id (no lock's key: those are <prefix><escaped name>/<lease>,
// and an escaped name has no "/").
func (b *Backend) ServiceIDKey() string { return b.cfg.prefix + "~service-id" }

// serviceID returns the identity of the prefix's token source, read (or drawn) at the
// first call and cached; an unreachable cluster yields an error wrapping
// lockclient.ErrUnavailable, and the next call tries again.
func (b *Backend) serviceID(ctx context.Context) (string, error) {
	b.idMu.Lock()
	defer b.idMu.Unlock()
	if b.id != "" {
		return b.id, nil
	}
	var raw [16]byte
	if _, err := crand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("etcdlock: service identity: %w", err)
	}
	fresh := hex.EncodeToString(raw[:])
	key := b.ServiceIDKey()
	reqCtx, cancel := b.requestContext(ctx)
	tr, err := b.cli.Txn(reqCtx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, fresh)).
		Else(clientv3.OpGet(key)).
		Commit()
	cancel()
	if err != nil {
		return "", unavailable(ctx, "read the service identity", err)
	}
	v := fresh
	if !tr.Succeeded {
		// The key exists (its create revision is not 0), so the Get in the same
		// transaction found it.
		if kv := floorKV(tr.Responses[0]); kv != nil {
			v = string(kv.Value)
		} else {
			v = ""
		}
	}
	if v == "" {
		return "", fmt.Errorf("etcdlock: %w: the service identity key %s is empty; delete it (the next Open draws a new identity)",
			lockclient.ErrInvalidConfig, key)
	}
	b.id = fmt.Sprintf("etcd:%016x:%s:%s", tr.Header.ClusterId, b.cfg.prefix, v)
	return b.id, nil
}

// ServiceID implements lockclient.ServiceIdentifier: the identity its Backend read
// when the session was opened.
func (s *session) ServiceID() string { return s.serviceID }

package etcdlock

import (
	"fmt"

	"github.com/fencedsql/fencedsql/lockclient"
)

// A session's identity (lockclient.ServiceIdentifier) names the token source: the etcd
// cluster, whose revision every token counts, and the prefix, under which the floor
// key added to it lives (Backend.FloorKey): "etcd:<cluster id>:<prefix>". The cluster
// id comes in the header of the session lease's grant, which Open makes anyway: no
// round trip of its own. Every process on one cluster with one prefix gets the same
// identity; another cluster or another prefix another. A prefix kept apart only by a
// namespace wrapper around the etcd client (namespace.NewKV) is not seen: two such
// namespaces with one prefix answer the same identity.

var _ lockclient.ServiceIdentifier = (*session)(nil)

// ServiceID implements lockclient.ServiceIdentifier; "" when etcd's answers carried no
// cluster id.
func (s *session) ServiceID() string {
	s.mu.Lock()
	id := s.clusterID
	s.mu.Unlock()
	if id == 0 {
		return ""
	}
	return fmt.Sprintf("etcd:%016x:%s", id, s.b.cfg.prefix)
}

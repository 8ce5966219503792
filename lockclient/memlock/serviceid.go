package memlock

import (
	crand "crypto/rand"
	"encoding/hex"

	"github.com/fencedsql/fencedsql/lockclient"
)

// A Service's identity (lockclient.ServiceIdentifier) is "memlock:" and a random value
// drawn by New: every Client of one Service shares its token counter and its identity,
// two Services have two counters and two identities.

var _ lockclient.ServiceIdentifier = (*Service)(nil)

// newServiceID draws the identity of a new Service.
func newServiceID() string {
	var b [12]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand panics rather)
	return "memlock:" + hex.EncodeToString(b[:])
}

// ServiceID implements lockclient.ServiceIdentifier: the Service's identity, the same
// for every session of the Service and different for every other Service.
func (s *Service) ServiceID() string { return s.id }

// ServiceID implements lockclient.ServiceIdentifier: its Service's identity.
func (ss *session) ServiceID() string { return ss.svc.id }

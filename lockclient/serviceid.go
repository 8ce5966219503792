package lockclient

// ServiceIdentifier names the token source a lease's token was drawn from. Tokens of
// one lock service compare (each is above every earlier one), tokens of two services
// do not: a caller that binds several leases to one piece of work
// (fencedsql.WithLeases) compares their identities and refuses a mix.
//
// ServiceID returns the identity, or "" when it is unknown. Two values are equal when
// the tokens come from the same counter — every Client and process of one service, the
// same etcd cluster and prefix, the same Redis counter, the same sqllock token source —
// and differ for two counters, as far as the backend can tell (each backend's
// documentation says how it names its source). Comparing "" with anything says
// nothing.
//
// It is implemented by *Lease, and by the Sessions of the four shipped backends
// (memlock, etcdlock, redislock, sqllock): the Client reads its Session's identity at
// each grant (a field read, no round trip) and the Lease answers it. A session may
// learn its identity after Open (sqllock opened before CreateTable reads it at the
// next grant; red-team rt44c F3), so a Lease answers what its session knew when it was
// granted. A Session of another backend that does not implement it leaves its Leases'
// identity unknown.
type ServiceIdentifier interface {
	ServiceID() string
}

var _ ServiceIdentifier = (*Lease)(nil)

// ServiceID implements ServiceIdentifier: the identity of the lock service that granted
// the lease, read from the Client's session when the lease was granted; "" when the
// backend does not name it, and for a nil or zero-value Lease.
func (l *Lease) ServiceID() string {
	if l == nil {
		return ""
	}
	return l.serviceID
}

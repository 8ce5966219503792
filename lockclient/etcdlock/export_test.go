package etcdlock

// SetLeaveHook makes hook run in the background clean-up of every queue key that a
// session of b abandons (leave): before (done false) and after (done true) its delete.
// Call it before b's first Open.
func SetLeaveHook(b *Backend, hook func(ekey string, done bool)) { b.leaveHook = hook }

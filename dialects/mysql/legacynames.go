package mysql

import (
	"fmt"
	"hash/fnv"
)

// legacyDerived is the name a release before the 64-bit hash (red-team rt56a F5)
// derived from prefix and table name: prefix+name, or, past 64 characters, its first
// 55 characters and "_" and the 8 hex digits of the FNV-32a hash of name. An upgrade
// finds the objects that release installed under it: the guard's and the tombstone
// guard's triggers are then triggers of another name on the table, which the guard's
// Fix replaces (ownTriggers, TombstoneCarryDDL: the tombstones of the old tombstone
// table are carried over); the absence recorder is a routine that writes the table,
// which tombRoutine reports with a Fix dropping it (the tombstone guard's Fix creates
// the recorder of the new name). The old fence function, which reads and writes
// nothing, and the old tombstone table, which the carry-over keeps as it keeps a
// renamed table's, stay.
func legacyDerived(prefix, name string) string {
	full := prefix + name
	if len([]rune(full)) <= maxIdentLen {
		return full
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	suffix := fmt.Sprintf("_%08x", h.Sum32())
	return string([]rune(full)[:maxIdentLen-len(suffix)]) + suffix
}

package dialect

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Reduced is implemented by a dialect built on another that leaves out, on purpose,
// some of that dialect's optional capabilities (a test of what the wrapper does
// without one, a database that lacks the feature). Complete refuses a dialect built
// on another that lacks any of its capabilities unless this names each of them.
type Reduced interface {
	// OmittedCapabilities names the optional interfaces of this package (as
	// MissingCapabilities names them: "Registrar", "GuardFinder", …) the dialect leaves
	// out on purpose. A capability missing and not named here is refused, so that one
	// a later version of the dialect built on adds is not lost without a word.
	OmittedCapabilities() []string
}

// IncompleteError is Complete's refusal: the dialect Dialect lacks optional
// capabilities (Missing) that the dialect Base has, which it is built on (a field of
// it, embedded or not, at any depth, holds Base) or whose Name it bears. Every
// optional capability is found by type assertion, and one missing is taken for "this
// database has no such thing": the checks it serves are skipped, not failed.
type IncompleteError struct {
	Dialect string   // the refused dialect's Name() and type
	Base    string   // the dialect it is built on or named after: its Name() (when it can be read) and type
	Named   bool     // Base is a registered dialect whose Name the refused one bears, not one it is built on
	Missing []string // the capabilities Base has and Dialect lacks, sorted
}

func (e *IncompleteError) Error() string {
	how := "is built on"
	if e.Named {
		how = "bears the name of"
	}
	return "the dialect " + e.Dialect + " " + how + " the dialect " + e.Base + " but lacks capabilities it has: " +
		strings.Join(e.Missing, ", ") + "; each one missing would be taken for \"this database has no such thing\" and its checks skipped (what the database records as guarded among them); " +
		"a value that embeds a dialect as its dialect.Dialect interface hides every optional interface: forward each of them (a method that calls the dialect's own), or name those left out on purpose in an OmittedCapabilities method (dialect.Reduced)"
}

// Complete refuses d when it hides optional capabilities of a dialect it is built on
// (red-team rt44b F2, rt45c F1–F4): a value that embeds a stock dialect as its Dialect
// interface — the natural way to customise one, the stock dialects being interface
// values of unexported types — answers none of the optional interfaces, whatever its
// Name, and the wrapper and package schema took each missing one for "this database
// has no such thing" (the registry of guarded tables not read, MaxToken answering too
// low, schema.Check reporting no side door).
//
// It walks d's value by reflection: every field, embedded or not, exported or not, of
// d and of the structs, pointers and interfaces it holds (and the first elements of
// arrays and slices), to a bounded depth; each value found there that implements
// Dialect is a dialect d is built on. d must implement every optional interface each
// of them implements (MissingCapabilities), but those d names in OmittedCapabilities
// (Reduced) and those a dialect between them names there; the dialects found are
// checked the same way against those they are built on (but what the dialects above
// them name counts as omitted there too). Besides, a d that bears the
// Name of one of named (the registered stock dialects, as the wrapper passes them)
// without being of its type is held to that dialect's capabilities too.
//
// A dialect built on none (written from scratch) passes: what it implements is its own
// statement of what its database has. What the walk cannot see: a dialect reached only
// through a function value (a closure) or a map. The answer is an *IncompleteError
// naming the missing capabilities, or nil; d nil passes (the callers refuse it).
func Complete(d Dialect, named ...Dialect) error {
	if d == nil {
		return nil
	}
	root := &dialectNode{t: reflect.TypeOf(d), name: safeName(d), omitted: omittedBy(d)}
	w, v := newWalker(), reflect.ValueOf(d)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		w.onPath[ptrKey{v.Pointer(), v.Type()}] = true
	}
	root.bases, _ = w.own(v, 0)
	if err := root.check(nil); err != nil {
		return err
	}
	for _, ref := range named {
		if ref == nil || reflect.TypeOf(ref) == root.t || safeName(ref) != root.name {
			continue
		}
		if missing := without(MissingCapabilities(d, ref), root.omitted); len(missing) > 0 {
			return &IncompleteError{Dialect: root.describe(), Base: describe(safeName(ref), reflect.TypeOf(ref)), Named: true, Missing: missing}
		}
	}
	return nil
}

// dialectNode is a dialect found in the walk: its type, its Name and the capabilities
// it omits on purpose when its value could be read (an unexported field's cannot: then
// none), and the dialects it is built on.
type dialectNode struct {
	t       reflect.Type
	name    string
	omitted []string
	bases   []*dialectNode
}

// check refuses n when it lacks a capability of a dialect it is built on, at any
// depth, that neither it, nor a dialect between them, nor one built on n (inherited:
// the omissions of the dialects above n in the walk) omits on purpose; then checks
// each dialect it is built on the same way. A dialect that forwards a capability to
// the one it is built on, which lacks it, would answer nothing: so a dialect in the
// middle is held to what it is built on too, unless the stack says it leaves the
// capability out.
func (n *dialectNode) check(inherited []string) error {
	omitted := append(slices.Clip(inherited), n.omitted...)
	if err := n.against(n.bases, omitted); err != nil {
		return err
	}
	for _, b := range n.bases {
		if err := b.check(omitted); err != nil {
			return err
		}
	}
	return nil
}

func (n *dialectNode) against(bases []*dialectNode, omitted []string) error {
	for _, b := range bases {
		if missing := without(missingByType(n.t, b.t), omitted); len(missing) > 0 {
			return &IncompleteError{Dialect: n.describe(), Base: b.describe(), Missing: missing}
		}
		if err := n.against(b.bases, append(slices.Clip(omitted), b.omitted...)); err != nil {
			return err
		}
	}
	return nil
}

func (n *dialectNode) describe() string { return describe(n.name, n.t) }

func describe(name string, t reflect.Type) string {
	if name == "" {
		return "of type " + t.String()
	}
	return strconv.Quote(name) + " (" + t.String() + ")"
}

// Bounds of the walk: how deep it goes, and how many elements of an array or slice it
// looks at.
const (
	maxWalkDepth    = 8
	maxWalkElements = 16
)

var dialectType = reflect.TypeFor[Dialect]()

// walker finds the dialects held in a dialect's value. Each path is judged on its
// own (red-team rt46c F2): a pointer met on two paths — a wrapper held both as the
// dialect's embedded Dialect and inside a sibling that omits capabilities on purpose,
// or deep in a config struct where the depth bound cut its walk — is walked on each,
// so that what one path excused or cut off hides nothing on the other. onPath holds
// the pointers on the current path (pushed on entry, popped on return), which is all
// that stopping a cycle needs; memo keeps what a pointer held at a depth, when no
// cycle cut its walk, so that a value sharing one pointer many times is walked once
// per depth, not once per path.
type walker struct {
	onPath map[ptrKey]bool
	memo   map[memoKey][]*dialectNode
}

// ptrKey is a pointer and its type (a pointer to a struct and one to its first field
// share an address).
type ptrKey struct {
	p uintptr
	t reflect.Type
}

type memoKey struct {
	ptrKey
	depth int
}

func newWalker() *walker {
	return &walker{onPath: map[ptrKey]bool{}, memo: map[memoKey][]*dialectNode{}}
}

// pointer runs walk for the non-nil pointer v met at depth: nothing when v is on the
// current path (a cycle: cut reports it, and the answer is not memoised), what was
// found before at that depth, or walk's answer.
func (w *walker) pointer(v reflect.Value, depth int, walk func() ([]*dialectNode, bool)) ([]*dialectNode, bool) {
	key := ptrKey{v.Pointer(), v.Type()}
	if w.onPath[key] {
		return nil, true
	}
	if found, ok := w.memo[memoKey{key, depth}]; ok {
		return found, false
	}
	w.onPath[key] = true
	found, cut := walk()
	delete(w.onPath, key)
	if !cut {
		w.memo[memoKey{key, depth}] = found
	}
	return found, cut
}

// value looks at one value held by a dialect (or by a value inside one): a dialect is
// a node (its own fields walked for the dialects it is built on), anything else is
// walked for the dialects inside it. cut reports a walk a cycle cut short.
func (w *walker) value(v reflect.Value, depth int) ([]*dialectNode, bool) {
	if !v.IsValid() {
		return nil, false
	}
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	if !v.Type().Implements(dialectType) {
		return w.contents(v, depth+1)
	}
	build := func() ([]*dialectNode, bool) {
		node := &dialectNode{t: v.Type()}
		if v.CanInterface() {
			d := v.Interface().(Dialect)
			node.name, node.omitted = safeName(d), omittedBy(d)
		}
		bases, cut := w.own(v, depth+1)
		node.bases = bases
		return []*dialectNode{node}, cut
	}
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		return w.pointer(v, depth, build)
	}
	return build()
}

// own returns the dialects the dialect v is built on: those its value holds. The value
// a pointer dialect points to is the same dialect, not one it is built on (red-team
// rt46c F3: a struct forwarding capabilities with pointer receivers, used as a
// pointer, was held to them through its own value type): its fields are walked as the
// pointer's own.
func (w *walker) own(v reflect.Value, depth int) ([]*dialectNode, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	return w.contents(v, depth)
}

// contents returns the dialects held in v, which is not one (a field's value, a
// struct, a pointer, an interface, an array or slice, bounded by maxWalkElements),
// to maxWalkDepth.
func (w *walker) contents(v reflect.Value, depth int) ([]*dialectNode, bool) {
	if depth > maxWalkDepth || !v.IsValid() {
		return nil, false
	}
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			return w.value(v.Elem(), depth)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return w.pointer(v, depth, func() ([]*dialectNode, bool) { return w.value(v.Elem(), depth) })
		}
	case reflect.Struct:
		var found []*dialectNode
		cut := false
		for i := range v.NumField() {
			f, c := w.value(v.Field(i), depth)
			found, cut = appendNodes(found, f), cut || c
		}
		return found, cut
	case reflect.Array, reflect.Slice:
		var found []*dialectNode
		cut := false
		for i := range min(v.Len(), maxWalkElements) {
			f, c := w.value(v.Index(i), depth)
			found, cut = appendNodes(found, f), cut || c
		}
		return found, cut
	}
	return nil, false
}

// appendNodes appends to dst the nodes of src it does not hold yet (one pointer
// held many times is one dialect built on).
func appendNodes(dst, src []*dialectNode) []*dialectNode {
	for _, n := range src {
		if !slices.Contains(dst, n) {
			dst = append(dst, n)
		}
	}
	return dst
}

// omittedBy returns what d omits on purpose (Reduced), none when it says nothing or
// its method panics.
func omittedBy(d Dialect) (omitted []string) {
	r, ok := d.(Reduced)
	if !ok {
		return nil
	}
	defer func() {
		if recover() != nil {
			omitted = nil
		}
	}()
	return r.OmittedCapabilities()
}

// safeName returns d.Name(), "" when it panics (a nil pointer, a nil embedded
// interface).
func safeName(d Dialect) (name string) {
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	return d.Name()
}

// missingByType is MissingCapabilities on types.
func missingByType(dt, rt reflect.Type) []string {
	var missing []string
	for _, it := range optionalInterfaces() {
		if rt.Implements(it) && !dt.Implements(it) {
			missing = append(missing, it.Name())
		}
	}
	slices.Sort(missing)
	return missing
}

// without returns the names of missing not in omitted.
func without(missing, omitted []string) []string {
	var out []string
	for _, m := range missing {
		if !slices.Contains(omitted, m) {
			out = append(out, m)
		}
	}
	return out
}

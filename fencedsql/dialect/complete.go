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
	walkDialects(reflect.ValueOf(d), root, 0, map[uintptr]bool{})
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

// walkDialects finds the dialects held in v (a dialect's value, or a value inside
// one) and adds them to parent's bases; a dialect found is walked in turn as its own
// node. seen stops pointer cycles.
func walkDialects(v reflect.Value, parent *dialectNode, depth int, seen map[uintptr]bool) {
	if depth > maxWalkDepth || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			visit(v.Elem(), parent, depth, seen)
		}
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		visit(v.Elem(), parent, depth, seen)
	case reflect.Struct:
		for i := range v.NumField() {
			visit(v.Field(i), parent, depth, seen)
		}
	case reflect.Array, reflect.Slice:
		for i := range min(v.Len(), maxWalkElements) {
			visit(v.Index(i), parent, depth, seen)
		}
	}
}

// visit looks at one value held by parent: a dialect becomes a base of parent (and is
// walked as its own node), anything else is walked for dialects inside it.
func visit(v reflect.Value, parent *dialectNode, depth int, seen map[uintptr]bool) {
	if !v.IsValid() {
		return
	}
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Type().Implements(dialectType) {
		node := &dialectNode{t: v.Type()}
		if v.CanInterface() {
			d := v.Interface().(Dialect)
			node.name, node.omitted = safeName(d), omittedBy(d)
		}
		parent.bases = append(parent.bases, node)
		walkDialects(v, node, depth+1, seen)
		return
	}
	walkDialects(v, parent, depth+1, seen)
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

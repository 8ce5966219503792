package dialect

import (
	"fmt"
	"testing"
	"time"
)

// ptrForwards customises the stock dialect the way IncompleteError recommends
// (forwarding each capability), with pointer receivers, and is used as a pointer:
// *ptrForwards implements every capability the stock dialect has.
type ptrForwards struct{ Dialect }

func (p *ptrForwards) EndTx(commit bool) string { return p.Dialect.(TxEnder).EndTx(commit) }
func (p *ptrForwards) FoldSchemaName(s string) string {
	return p.Dialect.(SchemaNameFolder).FoldSchemaName(s)
}

// ptrEmbeds is the same without the forwards: refused.
type ptrEmbeds struct{ Dialect }

// The value a pointer dialect points to is the same dialect, not one it is built on
// (red-team rt46c F3): a pointer forwarding every capability with pointer receivers
// passes — its value type, which lacks the forwards, is not held to the stock
// dialect — and one forwarding none is refused under its own pointer type.
func TestCompletePointerReceiverForwardsAccepted(t *testing.T) {
	d := &ptrForwards{theStock}
	if m := MissingCapabilities(d, theStock); len(m) != 0 {
		t.Fatalf("setup: *ptrForwards lacks %v", m)
	}
	if err := Complete(d, theStock); err != nil {
		t.Errorf("Complete(&ptrForwards{stock}) = %v; want nil", err)
	}
	err := Complete(&ptrEmbeds{theStock}, theStock)
	refused(t, "pointer embedding the stock dialect", err, "SchemaNameFolder", "TxEnder")
	if ie, ok := err.(*IncompleteError); ok && ie.Dialect != "\"stock\" (*dialect.ptrEmbeds)" {
		t.Errorf("refusal names %s; want the pointer type", ie.Dialect)
	}
}

// sharedWrap is an application's wrapper of the stock dialect, used as a pointer: it
// hides every capability.
type sharedWrap struct{ Dialect }

// sharedLimited says it leaves capabilities out on purpose.
type sharedLimited struct {
	Dialect
	list []string
}

func (l sharedLimited) OmittedCapabilities() []string { return l.list }

// sharedApp holds a limited variant of the wrapper (declared first) and the wrapper
// itself, embedded: its methods are the wrapper's.
type sharedApp struct {
	Limited sharedLimited
	Dialect
}

func (sharedApp) Name() string { return "app" }

// A pointer reached on two paths is judged on each (red-team rt46c F2): what a
// sibling that omits capabilities on purpose excuses under it does not excuse the
// dialect that embeds the same pointer beside it, whatever the fields' order.
func TestCompleteSharedPointerJudgedOnEachPath(t *testing.T) {
	w := &sharedWrap{theStock}
	omit := []string{"SchemaNameFolder", "TxEnder"}
	refused(t, "the wrapper alone", Complete(w, theStock), omit...)
	refused(t, "embedded first", Complete(struct {
		Dialect
		Limited sharedLimited
	}{w, sharedLimited{w, omit}}, theStock), omit...)
	refused(t, "embedded after the limited sibling", Complete(sharedApp{Limited: sharedLimited{w, omit}, Dialect: w}, theStock), omit...)
	// The sibling alone, naming its omissions, passes.
	if err := Complete(struct {
		bare
		Limited sharedLimited
	}{bare{"scratch"}, sharedLimited{w, omit}}, theStock); err != nil {
		t.Errorf("a value holding only the limited sibling: %v; want nil", err)
	}
}

// box nests a value n levels deep in non-dialect structs.
type box struct{ Inner any }

func boxed(v any, n int) any {
	for range n {
		v = box{v}
	}
	return v
}

type metaApp struct {
	Meta any // a config or metrics struct that also refers to the wrapper
	Dialect
}

func (metaApp) Name() string { return "app" }

// A pointer whose walk the depth bound cut on one path is walked again on another
// (red-team rt46c F2, second form): the wrapper held deep in a config struct, declared
// before the embedded wrapper, does not hide the stock dialect under the latter.
func TestCompleteSharedPointerCutByDepthBoundWalkedAgain(t *testing.T) {
	w := &sharedWrap{theStock}
	for n := 0; n <= 12; n++ {
		refused(t, fmt.Sprintf("wrapper also boxed %d levels deep", n), Complete(metaApp{Meta: boxed(w, n), Dialect: w}, theStock), "SchemaNameFolder", "TxEnder")
	}
}

// fan holds many pointers to the same values, at every level: judging each path must
// not walk each path's copy again (the walk memoises a pointer's contents per depth).
type fan struct {
	bare
	Kids []*fan
	D    Dialect
}

// A value sharing pointers on many paths, and cycles through them, is walked in
// bounded time and still judged.
func TestCompleteSharedPointersBounded(t *testing.T) {
	w := &sharedWrap{theStock}
	var level *fan
	for range 10 {
		next := &fan{bare: bare{"f"}, D: w}
		for range 16 {
			next.Kids = append(next.Kids, level)
		}
		level = next
	}
	level.Kids = append(level.Kids[:15], level) // a cycle
	start := time.Now()
	refused(t, "fan", Complete(level, theStock), "SchemaNameFolder", "TxEnder")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Complete took %v", d)
	}
}

package dialect

import (
	"errors"
	"slices"
	"testing"
)

// bare implements Dialect and nothing else: a dialect written from scratch.
type bare struct{ name string }

func (b bare) Name() string                         { return b.name }
func (bare) Syntax() Syntax                         { return SQLiteSyntax }
func (bare) NumberedParams() bool                   { return false }
func (bare) QuoteIdent(s string) string             { return s }
func (bare) Classify(error) ErrorInfo               { return ErrorInfo{} }
func (bare) ColumnsQuery(TableName) (string, []any) { return "", nil }
func (bare) GuardColumnsDDL(TableName, string, string, bool, bool) []string {
	return nil
}
func (bare) SessionQuery() string      { return "" }
func (bare) CheckSession(string) error { return nil }

// stock stands for a stock dialect: two optional capabilities beside Dialect.
type stock struct{ bare }

func (stock) EndTx(bool) string              { return "COMMIT" }
func (stock) FoldSchemaName(s string) string { return s }

var theStock Dialect = stock{bare{"stock"}}

// embeds is the usual customisation: the stock dialect embedded as its interface.
type embeds struct{ Dialect }

type renamed struct {
	Dialect
	name string
}

func (r renamed) Name() string { return r.name }

// forwards embeds it and forwards both capabilities.
type forwards struct{ Dialect }

func (f forwards) EndTx(c bool) string { return f.Dialect.(TxEnder).EndTx(c) }
func (f forwards) FoldSchemaName(s string) string {
	return f.Dialect.(SchemaNameFolder).FoldSchemaName(s)
}

// hidden holds it in an unexported field, in a pointer, in a slice.
type hidden struct {
	bare
	inner  Dialect
	ptr    *embeds
	others []Dialect
}

// omits leaves EndTx out on purpose.
type omits struct {
	Dialect
	list []string
}

func (o omits) OmittedCapabilities() []string { return o.list }

// cyclic points to itself.
type cyclic struct {
	bare
	self *cyclic
}

func refused(t *testing.T, what string, err error, missing ...string) {
	t.Helper()
	var ie *IncompleteError
	if !errors.As(err, &ie) || !slices.Equal(ie.Missing, missing) {
		t.Errorf("%s: %v; want an *IncompleteError missing %v", what, err, missing)
	}
}

// Complete refuses a dialect built on another (in any field, at any depth, whatever
// its name) that hides the other's capabilities, unless it says it leaves them out
// (Reduced); a dialect written from scratch, or one forwarding everything, passes
// (red-team rt45c F1–F4).
func TestComplete(t *testing.T) {
	for name, d := range map[string]Dialect{
		"the stock dialect":       theStock,
		"from scratch":            bare{"mine"},
		"from scratch, cyclic":    func() Dialect { c := &cyclic{bare: bare{"c"}}; c.self = c; return c }(),
		"forwarding everything":   forwards{theStock},
		"says what it leaves out": omits{theStock, []string{"SchemaNameFolder", "TxEnder"}},
		"nil embedded":            embeds{},
		"wraps from scratch":      embeds{bare{"x"}},
		"omits over forwarding":   omits{forwards{theStock}, []string{"SchemaNameFolder", "TxEnder"}},
		"outer says for middle":   omits{embeds{theStock}, []string{"SchemaNameFolder", "TxEnder"}},
	} {
		if err := Complete(d); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	all := []string{"SchemaNameFolder", "TxEnder"}
	refused(t, "embedded, stock name", Complete(embeds{theStock}), all...)
	refused(t, "embedded, other name", Complete(renamed{theStock, "Stock"}), all...)
	refused(t, "unexported field", Complete(hidden{bare: bare{"h"}, inner: theStock}), all...)
	refused(t, "pointer to a wrapper", Complete(hidden{bare: bare{"h"}, ptr: &embeds{theStock}}), all...)
	refused(t, "slice", Complete(hidden{bare: bare{"h"}, others: []Dialect{bare{"a"}, theStock}}), all...)
	refused(t, "wrapper of a wrapper", Complete(renamed{renamed{theStock, "a"}, "b"}), all...)
	refused(t, "says only part", Complete(omits{theStock, []string{"TxEnder"}}), "SchemaNameFolder")
	// A forwarding dialect over one that hides a capability would answer nothing for it.
	refused(t, "forwarding over a hiding one", Complete(forwards{embeds{theStock}}), all...)
	// A capability held in another interface field (the stock value as a TxEnder).
	type viaCapability struct {
		bare
		TxEnder
	}
	refused(t, "stock value in a capability field", Complete(viaCapability{bare{"v"}, theStock.(TxEnder)}), "SchemaNameFolder")
	// Bearing a registered dialect's name: held to its capabilities too.
	refused(t, "from scratch under the stock name", Complete(bare{"stock"}, theStock), all...)
	if err := Complete(bare{"other"}, theStock); err != nil {
		t.Errorf("from scratch under a name of its own: %v", err)
	}
	if err := Complete(theStock, theStock); err != nil {
		t.Errorf("the stock dialect itself, named: %v", err)
	}
}

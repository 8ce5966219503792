package plan

// Refusal is the planner's refusal of a statement it cannot fence: Table names the
// guarded table when one is known, Reason says why and what to do instead. Nothing is
// sent for a refused statement. Package fencedsql reports it as an *UnsupportedError
// (ErrUnsupported) with the same fields.
type Refusal struct {
	Table  string
	Reason string
}

func (e *Refusal) Error() string {
	if e.Table != "" {
		return "statement on guarded table " + e.Table + " cannot be fenced: " + e.Reason
	}
	return "statement cannot be fenced: " + e.Reason
}

package plan

// eqTerm reads sig[from:to] as column = value or value = column, each side read by
// column and value; one '=' only. It is the one reading of an equality conjunct, for
// the point claims (claim_point.go) and the absent-key claims (claim_absent.go), which
// differ only in what they accept as a column and as a value.
func (p *parser) eqTerm(from, to int, column func(from, to int) (string, bool), value func(from, to int) (arg int, lit string, ok bool)) (col string, arg int, lit string, ok bool) {
	eq := -1
	for k := from; k < to; k++ {
		if p.punct(k, "=") {
			if eq >= 0 {
				return "", 0, "", false
			}
			eq = k
		}
	}
	if eq < 0 {
		return "", 0, "", false
	}
	if c, ok := column(from, eq); ok {
		if a, l, ok := value(eq+1, to); ok {
			return c, a, l, true
		}
	}
	if c, ok := column(eq+1, to); ok {
		if a, l, ok := value(from, eq); ok {
			return c, a, l, true
		}
	}
	return "", 0, "", false
}

package sqllex

import "testing"

const benchUpdate = "UPDATE accounts SET balance = balance - $1, updated_at = now() WHERE id = $2 RETURNING balance"

func BenchmarkLex(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchUpdate)))
	for b.Loop() {
		if _, err := Lex(benchUpdate, Postgres); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLexAppend(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchUpdate)))
	buf := make([]Token, 0, 64)
	for b.Loop() {
		var err error
		if buf, err = LexAppend(buf[:0], benchUpdate, Postgres); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLexMySQL(b *testing.B) {
	const src = "UPDATE `accounts` SET balance = balance - ?, note = 'it\\'s' /* c */ WHERE id = ? # done"
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Lex(src, MySQL); err != nil {
			b.Fatal(err)
		}
	}
}

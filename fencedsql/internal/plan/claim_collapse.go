package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// A claim is counted: its read must return as many rows as its fencing UPDATE stamped
// (fencedsql's exact.go), the check that tells a read that differs from the stamp. A
// select list that collapses the rows it reads — an aggregate without a window
// (COUNT(*), SUM(…): one row for any number), DISTINCT — returns rows that are not the
// rows it locked, so no count can be checked: COUNT(*) over a row the stamp moved out
// of the read (an ON UPDATE column in the condition) answers 0 for a row it stamped,
// in one row, as many as one row stamped (red-team rt19e). GROUP BY and HAVING are
// refused with joins (lockingRead); these are refused here, with a token.

// aggregates are the aggregate functions of the dialects, by name: called without an
// OVER clause they collapse the rows they read into one.
var aggregates = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true, "group_concat": true,
	"json_arrayagg": true, "json_objectagg": true, "bit_and": true, "bit_or": true, "bit_xor": true,
	"std": true, "stddev": true, "stddev_pop": true, "stddev_samp": true, "var_pop": true,
	"var_samp": true, "variance": true, "array_agg": true, "string_agg": true, "every": true,
	"bool_and": true, "bool_or": true, "json_agg": true, "jsonb_agg": true, "json_object_agg": true,
	"jsonb_object_agg": true, "total": true, "xmlagg": true, "listagg": true,
}

// scalarBuiltins are MySQL/MariaDB built-in functions that are not aggregates, by
// name: a claim may call them (collapsingSelect). Any other bare name called in a
// claim's select list or ORDER BY may name a stored aggregate and is refused.
var scalarBuiltins = wordSet(`
	abs acos adddate addtime aes_decrypt aes_encrypt ascii asin atan atan2 benchmark bin
	binlog_gtid_pos bit_count bit_length cast ceil ceiling char_length character_length
	charset chr coalesce coercibility collation column_check column_create column_exists
	column_get column_json column_list compress concat concat_ws connection_id conv convert
	convert_tz cos cot crc32 crc32c curdate current_date current_role current_time
	current_timestamp current_user curtime database date date_add date_format date_sub
	datediff day dayname dayofmonth dayofweek dayofyear decode decode_histogram default
	degrees des_decrypt des_encrypt elt encode encrypt exp export_set extract extractvalue
	field find_in_set floor format found_rows from_base64
	from_days from_unixtime get_format get_lock greatest hex hour if ifnull inet6_aton
	inet6_ntoa inet_aton inet_ntoa insert instr is_free_lock is_ipv4 is_ipv4_compat
	is_ipv4_mapped is_ipv6 is_used_lock isnull json_array json_array_append
	json_array_insert json_compact json_contains json_contains_path json_depth
	json_detailed json_equals json_exists json_extract json_insert json_keys json_length
	json_loose json_merge json_merge_patch json_merge_preserve json_normalize json_object
	json_overlaps json_pretty json_query json_quote json_remove json_replace json_search
	json_set json_type json_unquote json_valid json_value last_day last_insert_id lastval
	lcase least left length lengthb ln load_file localtime localtimestamp locate log log10
	log2 lower lpad ltrim make_set makedate maketime master_gtid_wait master_pos_wait md5
	microsecond mid minute mod month monthname name_const natural_sort_key nextval now
	nullif nvl nvl2 oct octet_length old_password ord password period_add period_diff pi
	position pow power quarter quote radians rand random_bytes regexp_instr regexp_replace
	regexp_substr release_all_locks release_lock repeat replace reverse right round
	row_count rpad rtrim schema sec_to_time second session_user setval sformat sha sha1
	sha2 sign sin sleep soundex space sqrt str_to_date strcmp subdate substr substring
	substring_index subtime sys_guid sysdate system_user tan time time_format time_to_sec
	timediff timestamp timestampadd timestampdiff to_base64 to_char to_days to_seconds trim
	trim_oracle truncate ucase uncompress uncompressed_length unhex unix_timestamp updatexml
	upper user utc_date utc_time utc_timestamp uuid uuid_short values version week weekday
	weekofyear weight_string year yearweek`)

// callWords are MySQL/MariaDB keywords and type names that a '(' can follow in an
// expression without calling a function (x IN (…), CAST(x AS CHAR(10)), MATCH (…)
// AGAINST (…), TRIM(LEADING 'x' FROM (y))).
//
// ESCAPE and AGAINST are not reserved on MariaDB: escape(x) and against(x) call a
// stored function, so they are not listed (red-team rt26b F8); AGAINST is excused only
// right after the ')' of MATCH (…) (matchAgainst).
var callWords = wordSet(`
	all and any as between binary both case char character collate dec decimal
	datetime distinct div double else exists float for from in int integer
	interval is leading like match nchar not numeric on or over partition regexp rlike row
	signed some then time timestamp trailing unsigned using varbinary varchar when xor`)

// wordSet is the set of the blank-separated words of s.
func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// collapsingSelect explains how the select list sig[from:to] of a locking read
// collapses its rows (a top-level DISTINCT or DISTINCTROW, an aggregate called without
// OVER anywhere but inside a subquery: COALESCE(SUM(x), 0) collapses), or returns "".
func (p *parser) collapsingSelect(from, to int) string {
	var subq []bool // per open '(': whether it opens a subquery
	inSub := 0      // open subqueries
	for i := from; i < to; i++ {
		switch {
		case p.punct(i, "("):
			sq := p.subqueryAt(i + 1)
			subq = append(subq, sq)
			if sq {
				inSub++
			}
		case p.punct(i, ")"):
			if n := len(subq); n > 0 {
				if subq[n-1] {
					inSub--
				}
				subq = subq[:n-1]
			}
		case inSub > 0:
		case len(subq) == 0 && (p.kw(i, "DISTINCT") || p.kw(i, "DISTINCTROW")) && !p.isDistinctFrom(i):
			return "DISTINCT"
		case !p.rw.numbered && p.isIdent(i) && p.sig[i].Kind != sqllex.KindString && p.punct(i+1, "(") && !p.windowed(i+1, to):
			// MySQL/MariaDB's built-in aggregates, by their bare name. A quoted or
			// qualified name, or a bare one that names no built-in, is a stored function
			// (a bare call of a built-in's name calls the built-in), and MariaDB's
			// CREATE AGGREGATE FUNCTION makes one an aggregate: its one row can be as
			// many as the rows stamped while computed over none of them (red-team
			// rt25b F2). PostgreSQL refuses an aggregate in a locking read itself, and a
			// user's function there may be called total().
			n := p.text(p.sig[i])
			switch l := strings.ToLower(n); {
			case p.sig[i].Kind != sqllex.KindWord || p.punct(i-1, "."):
				return "a call of a stored function (" + n + "(…)), which may be a user-defined aggregate"
			case aggregates[l]:
				return "an aggregate (" + n + "())"
			case callWords[l] || p.matchAgainst(i):
			case p.sig[i].End != p.sig[i+1].Start:
				// With IGNORE_SPACE off (the default) a blank or comment between a
				// built-in's name and '(' makes name (…) a call of the stored function
				// of that name (substr (x), now (), red-team rt26b F7).
				return "a call of " + n + " (…) with a blank before '(', which may call a stored function, a user-defined aggregate"
			case !scalarBuiltins[l]:
				return "a call of " + n + "(…), which is not known as a MySQL/MariaDB built-in scalar function and may be a user-defined aggregate"
			}
		}
	}
	return ""
}

// matchAgainst reports whether sig[i] is the AGAINST of MATCH (…) AGAINST (…): the
// token before it is the ')' of a '(' that follows MATCH.
func (p *parser) matchAgainst(i int) bool {
	if !p.kw(i, "AGAINST") || !p.punct(i-1, ")") {
		return false
	}
	depth := 0
	for j := i - 1; j >= 0; j-- {
		switch {
		case p.punct(j, ")"):
			depth++
		case p.punct(j, "("):
			if depth--; depth == 0 {
				return p.kw(j-1, "MATCH")
			}
		}
	}
	return false
}

// isDistinctFrom reports whether the DISTINCT at sig[i] is that of the comparison
// a IS [NOT] DISTINCT FROM b.
func (p *parser) isDistinctFrom(i int) bool {
	return p.kw(i+1, "FROM") && (p.kw(i-1, "IS") || p.kw(i-1, "NOT") && p.kw(i-2, "IS"))
}

// selectFrom returns the sig index of the FROM of the SELECT at sig[start]: the first
// top-level FROM that is not that of IS [NOT] DISTINCT FROM, or len(sig).
func (p *parser) selectFrom(start int) int {
	from := p.clauseEnd(start+1, "FROM")
	for from < len(p.sig) && p.kw(from-1, "DISTINCT") && p.isDistinctFrom(from-1) {
		from = p.clauseEnd(from+1, "FROM")
	}
	return from
}

// subqueryAt reports whether sig[i] opens a subquery (SELECT, WITH, VALUES, TABLE).
func (p *parser) subqueryAt(i int) bool {
	return p.kw(i, "SELECT") || p.kw(i, "WITH") || p.kw(i, "VALUES") || p.kw(i, "TABLE")
}

// windowed reports whether the call whose '(' is sig[open] is followed, after its ')'
// (and a FILTER (…) clause), by OVER: a window function, which keeps its rows.
func (p *parser) windowed(open, to int) bool {
	depth := 0
	for i := open; i < to; i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
			if depth == 0 {
				j := i + 1
				if p.kw(j, "FILTER") && p.punct(j+1, "(") {
					for d := 0; j < to; j++ {
						if p.punct(j, "(") {
							d++
						} else if p.punct(j, ")") {
							if d--; d == 0 {
								break
							}
						}
					}
					j++
				}
				return p.kw(j, "OVER")
			}
		}
	}
	return false
}

// Package sqllex is a small, exact, dialect-aware SQL lexer that splits SQL
// text into tokens with byte offsets.
//
// fencedsql rewrites statements by splicing text into the user's SQL at
// byte offsets; it never re-emits SQL from a syntax tree, so comments,
// hints and placeholders survive untouched. Where a token starts and ends
// is therefore security-relevant: taking the inside of a string literal or
// comment for code, or code for a comment, could make the rewriter fence
// the wrong place or miss a write. The lexer is written to the server
// lexers' rules (PostgreSQL scan.l, MySQL sql_lex.cc, SQLite tokenize.c)
// and, where they disagree or the answer depends on server settings it
// cannot see, it fails closed with an error instead of guessing.
//
// # Contract
//
// [Lex] returns tokens that cover the input exactly: they are non-empty,
// contiguous and in order, and concatenating src[t.Start:t.End] over all of
// them gives back src. Every byte belongs to exactly one token; bytes that
// fit no class (control bytes, stray punctuation) become one-byte
// KindPunct tokens. Non-ASCII bytes outside literals, quoted identifiers
// and comments are identifier bytes, as in all three servers, so Unicode
// identifiers and invalid UTF-8 lex as words. Lex never panics.
//
// Lex allocates only the token slice (32 bytes a token, one allocation for
// typical statements); [LexAppend] appends to a caller's slice and does not
// allocate once that slice is large enough.
//
// On any lexical error Lex returns no tokens and a *[Error] holding the
// byte offset of the offending construct and a fixed message; the message
// never quotes the SQL text, which may carry secrets or row data. Errors:
//
//   - an unterminated '...' string, "..." or `...` or [...] quoted
//     identifier, $tag$ dollar-quoted string, or /* */ comment (SQLite
//     accepts an unterminated /* comment; it is still an error here);
//   - a NUL byte anywhere (SQLite and parts of MySQL's lexer stop reading at
//     it, so it could hide the rest of a statement inside a comment);
//   - a "$" that is neither $n nor a dollar quote (PostgreSQL), nor an SQLite
//     $name; under [MySQL], any token starting with "$" ($ as the first
//     identifier character is deprecated, and newer MySQL releases quote
//     stored program bodies with $$ or $tag$);
//   - a "?" directly followed by an identifier character (MySQL does not
//     treat it as a placeholder), ?0 and numbers above 99999, $0;
//   - an identifier character directly after a number or $n (1abc is an
//     identifier in MySQL, an error in PostgreSQL 15+ and SQLite, and "1 AS
//     abc" in older PostgreSQL); this also rejects digit separators
//     (1_000) and upper-case 0X / 0B prefixes;
//   - an SQLite named parameter with the Tcl array suffix, $a(x);
//   - a UTF-8 byte order mark at the start of a token (whitespace for
//     SQLite, identifier bytes for the others);
//   - under [MySQL], "--" followed by a non-ASCII byte (whether it starts a
//     comment depends on the connection character set);
//   - an executable comment (below) whose extent depends on the server.
//
// # Token kinds
//
// Whitespace runs are KindSpace (ASCII space, \t, \n, \r, \f, \v). Comments
// are KindComment: -- to end of line (the newline is not part of the
// comment), /* */, and # with HashComments. Bare identifiers and keywords
// are KindWord; use [IsKeyword] and [Ident]. Quoted identifiers are
// KindQuotedIdent, string literals of every form KindString (a one-letter
// prefix is part of the token: E'..', N'..', X'..', B'..', U&'..'),
// numeric literals KindNumber, placeholders KindParam (with Num set for $n
// and ?NNN), and everything else KindPunct. The characters ( ) , ; . = are
// always single-character tokens, except that = belongs to the operators
// <= >= != == := => <=>. A few other multi-character operators are kept
// together (<> << >> || && :: -> ->> @> <@ ~* !~ !~* @@, and ?| ?& #> #>>
// where ? and # are operators); no operator token ever contains the start
// of a comment.
//
// # Syntax flags
//
// A [Syntax] value selects the dialect; use [Postgres], [MySQL] or
// [SQLite]:
//
//   - BackslashEscapes (MySQL): a backslash escapes the next byte in '...'
//     and, with DoubleQuoteStrings, "..." literals; without it a backslash
//     is an ordinary byte ('a\' is a complete string).
//   - DoubleQuoteStrings (MySQL): "..." is a string; otherwise a quoted
//     identifier with "" doubling.
//   - Backticks (MySQL, SQLite): `quoted identifier`, in which a doubled
//     backtick stands for one.
//   - Brackets (SQLite): [quoted identifier], no escapes; with
//     BracketDoubling (MariaDB under sql_mode=MSSQL) ]] stands for one ].
//   - DollarQuotes (PostgreSQL): $$...$$ and $tag$...$tag$ strings; a $
//     inside a word (a$b) belongs to the word.
//   - EStrings (PostgreSQL): E'...' with backslash escapes when E is a
//     one-letter word, including PostgreSQL's rule that a literal continued
//     after a newline ('a'<newline>'b') keeps the first part's rules, so
//     the continuation of an E'...' string also takes backslash escapes; and
//     the U&'...' and U&"..." forms.
//   - HashComments (MySQL): # comments to end of line.
//   - NestedComments (PostgreSQL): /* comments nest.
//   - ExecComments (MySQL/MariaDB): /*! */, /*M! */ and /*+ */ are
//     KindExecComment.
//   - DollarParams (PostgreSQL): $1 ... $99999.
//   - QuestionParams (MySQL, SQLite): ? placeholders (? inside strings and
//     comments is of course not one).
//   - NamedParams (SQLite): ?NNN, :name, @name, $name, #name.
//   - DashCommentNeedsSpace (MySQL): -- starts a comment only if followed by
//     whitespace, a control character or the end of input.
//   - CRLineEnd (PostgreSQL): \r also ends a -- comment; MySQL and SQLite
//     end line comments at \n only.
//
// Without QuestionParams "?" is an operator character (PostgreSQL jsonb).
//
// # Executable comments
//
// MySQL executes the body of /*!NNNNN ... */ when the server version is at
// least NNNNN, lexing it as SQL in which a string or comment may contain
// "*/"; otherwise it skips it up to the first "*/" (allowing one nested
// /* */). MariaDB executes /*M! */, which MySQL skips; optimizer hints /*+
// */ are parsed by a hint scanner after SELECT/INSERT/UPDATE/DELETE/REPLACE
// and are plain comments elsewhere. The lexer therefore accepts such a
// comment only when every reading ends it at the same first "*/": a quote,
// backtick or # / -- comment in the body must close before it, and a
// nested /* is refused. The whole comment is one KindExecComment token.
// Its content may change what the statement does; a rewriter that cannot
// reason about it should refuse statements containing one.
//
// # Known limits
//
// The lexer sees only the SQL text, not the session. Callers must refuse or
// configure sessions whose settings change the lexical rules:
//
//   - MySQL sql_mode ANSI_QUOTES makes "x" an identifier: use a Syntax with
//     DoubleQuoteStrings false. NO_BACKSLASH_ESCAPES makes backslash an
//     ordinary character: use BackslashEscapes false. MariaDB's
//     sql_mode=ORACLE makes every -- a comment: use
//     DashCommentNeedsSpace false.
//   - PostgreSQL standard_conforming_strings=off makes backslashes escape
//     in plain '...' strings; the Postgres syntax assumes on (the default
//     since 9.1).
//   - MySQL connection character sets in which an ASCII byte such as
//     0x5C (backslash) or 0x27 (quote) can be the second byte of a
//     multi-byte character (GBK, Big5, SJIS, CP932, GB18030) are not
//     supported: the lexer assumes every byte below 0x80 is ASCII
//     (UTF-8, latin1 and the like).
//   - SQLite treats "x" as a string literal when no such column exists;
//     the token is still KindQuotedIdent here.
//   - PostgreSQL psql meta-commands and :variables, and MySQL client
//     DELIMITER commands, are client syntax, not server SQL.
package sqllex

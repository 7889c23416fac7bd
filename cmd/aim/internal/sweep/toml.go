// Package sweep holds what `aim sweep` needs beside the commands it runs: the reader of sweep
// files (a subset of TOML, parsed by go-toml/v2, with a line number on every error), the grid
// of runs a sweep file describes and its deterministic shards, and the journal of finished
// runs that makes a sweep resumable after a crash.
package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Kind is the type of a TOML value.
type Kind int

// The kinds of value the sweep files use.
const (
	String Kind = iota
	Integer
	Float
	Bool
	Array
)

// String names the kind for error messages.
func (k Kind) String() string {
	return [...]string{"a string", "an integer", "a number", "a boolean", "a list"}[k]
}

// Value is one TOML value: a string, an integer, a finite float, a boolean, or an array of
// scalars of one kind.
type Value struct {
	Kind  Kind
	Str   string
	Int   int64
	Float float64
	Bool  bool
	Elems []Value
	Line  int // where the value starts (1-based)
}

// Text returns a scalar the way a command-line flag takes it: strings as they are, integers
// in decimal, floats in the shortest form that reads back to the same float64.
func (v Value) Text() string {
	switch v.Kind {
	case String:
		return v.Str
	case Integer:
		return strconv.FormatInt(v.Int, 10)
	case Float:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	case Bool:
		return strconv.FormatBool(v.Bool)
	}
	return ""
}

// Entry is one key = value line.
type Entry struct {
	Key   string
	Value Value
	Line  int
}

// Table is the root table (Name "") or a [name] table with its entries in file order.
type Table struct {
	Name    string
	Line    int
	Entries []Entry
}

// Doc is a parsed file: Tables[0] is the root table.
type Doc struct {
	Tables []Table
}

// Table returns the table of that name, or nil.
func (d *Doc) Table(name string) *Table {
	for i := range d.Tables {
		if d.Tables[i].Name == name {
			return &d.Tables[i]
		}
	}
	return nil
}

// Error is a problem at a line of a file (line 0: the file as a whole).
type Error struct {
	Line int
	Msg  string
}

// Error returns "line N: message", or the message alone for line 0.
func (e Error) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// Errors is every problem found in a file, in line order.
type Errors []Error

// Error returns the problems one a line.
func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// sorted returns the errors ordered by line (stable), or nil when there are none.
func (es Errors) sorted() error {
	if len(es) == 0 {
		return nil
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
	return es
}

// Parse reads the subset of TOML that sweep files use: comments, bare or quoted keys, [table]
// headers, strings, integers, finite floats, booleans, and arrays of scalars of one kind
// (over several lines if need be). The file is parsed by go-toml/v2 (package unstable, whose
// syntax tree carries the position of every node); Parse walks that tree. Dotted keys, inline
// tables, arrays of tables, nested arrays, multi-line strings and dates are refused with an
// error that says so, and so are a key or a table set twice. Every problem is reported, each
// with its line, as an Errors: after a syntax error, parsing resumes on a later line.
func Parse(src []byte) (*Doc, error) {
	if !utf8.Valid(src) {
		return nil, Errors{{0, "the file is not UTF-8 text"}}
	}
	w := &walker{
		buf:  bytes.Clone(src),
		doc:  &Doc{Tables: []Table{{Name: "", Line: 1}}},
		seen: map[string]map[string]int{"": {}},
	}
	w.lineStarts = []int{0}
	for i, c := range src {
		if c == '\n' {
			w.lineStarts = append(w.lineStarts, i+1)
		}
	}
	for start, tainted := 0, 0; start < len(w.buf); {
		start, tainted = w.chunk(start, tainted)
	}
	return w.doc, w.errs.sorted()
}

// walker turns go-toml's syntax tree into a Doc, and collects the problems.
type walker struct {
	buf        []byte // the file, with the lines of syntax errors blanked as they are found
	lineStarts []int  // the offset of each line
	doc        *Doc
	cur        int                       // the table entries go to: an index in doc.Tables, or -1 to drop them
	seen       map[string]map[string]int // table name -> key -> line
	errs       Errors
	syntax     int // the syntax errors so far
}

// maxSyntaxErrors is where Parse stops reading a file that is not TOML.
const maxSyntaxErrors = 20

func (w *walker) errorf(line int, format string, args ...any) {
	w.errs = append(w.errs, Error{line, fmt.Sprintf(format, args...)})
}

// lineOf returns the (1-based) line of a byte offset in the file.
func (w *walker) lineOf(off int) int {
	return sort.SearchInts(w.lineStarts, off+1)
}

// lineStart returns the offset of a line, or the length of the file past its last line.
func (w *walker) lineStart(line int) int {
	if line > len(w.lineStarts) {
		return len(w.buf)
	}
	return w.lineStarts[line-1]
}

// chunk parses the file from offset start, which is the start of a line, to its end or to the
// first syntax error. It returns where to go on from, with the line blanked there (0 if none):
// an expression that starts above that line spans it, and is dropped.
func (w *walker) chunk(start, tainted int) (next, blanked int) {
	var p unstable.Parser
	data := w.buf[start:]
	p.Reset(data)
	resume := start // the start of the line after the last expression read
	for p.NextExpression() {
		e := p.Expression()
		first, last := w.extent(e)
		if tainted == 0 || w.lineOf(start+first) > tainted {
			w.expression(start, e)
		}
		resume = w.lineStart(w.lineOf(start+last) + 1)
	}
	err := p.Error()
	if err == nil {
		return len(w.buf), 0
	}
	off, msg := syntaxError(data, err)
	line := w.lineOf(start + off)
	w.errorf(line, "%s", msg)
	if w.syntax++; w.syntax == maxSyntaxErrors {
		w.errorf(line, "too many syntax errors: the rest of the file is not read")
		return len(w.buf), 0
	}
	// Recovery: without the bad line, the expression may now parse (an array with a bad line
	// of elements); if it does not, go on from the next line.
	if w.blank(line) && parsesFrom(w.buf[resume:]) {
		return resume, line
	}
	return w.lineStart(line + 1), 0
}

// extent returns the offsets of the first and last bytes of a top-level expression, relative
// to the parser's input.
func (w *walker) extent(e *unstable.Node) (first, last int) {
	if e.Kind == unstable.KeyValue {
		return int(e.Raw.Offset), int(e.Raw.Offset+e.Raw.Length) - 1
	}
	first = -1
	for it := e.Key(); it.Next(); {
		r := it.Node().Raw
		if first < 0 {
			first = int(r.Offset)
		}
		last = int(r.Offset+r.Length) - 1
	}
	return first, last
}

// blank replaces the text of a line by spaces; it reports false when the line was blank.
func (w *walker) blank(line int) bool {
	a, b := w.lineStart(line), w.lineStart(line+1)
	if b > a && w.buf[b-1] == '\n' {
		b--
	}
	if len(bytes.Trim(w.buf[a:b], " ")) == 0 {
		return false
	}
	for i := a; i < b; i++ {
		w.buf[i] = ' '
	}
	return true
}

// parsesFrom reports whether the first expression of b, if any, parses.
func parsesFrom(b []byte) bool {
	var p unstable.Parser
	p.Reset(b)
	return p.NextExpression() || p.Error() == nil
}

// syntaxError returns the offset in data of a parser error and its message: go-toml's, or one
// that names the problem in the words of a sweep file.
func syntaxError(data []byte, err error) (int, string) {
	var perr *unstable.ParserError
	if !errors.As(err, &perr) {
		return len(data) - 1, err.Error()
	}
	off := cap(data) - cap(perr.Highlight) // the highlight is a slice of data
	if off < 0 || off >= len(data) {
		off = len(data) - 1
	}
	at, msg := data[off:], perr.Message
	switch {
	case msg == "expected value, not end of input":
		return off, "missing value"
	case strings.HasPrefix(msg, "unexpected character ") && strings.HasSuffix(msg, " at start of value"):
		switch c := at[0]; {
		case c == '\n' || c == '\r' || c == '#':
			return off, "missing value"
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			return off, fmt.Sprintf("%s is not a value (strings need quotes)", word(at))
		}
		return off, fmt.Sprintf("%s is not a value", word(at))
	case msg == "integers cannot have leading zeroes": // highlighted from the digits, after any sign
		if off > 0 && (data[off-1] == '+' || data[off-1] == '-') {
			off--
		}
		return off, fmt.Sprintf("%s is not a value (%s)", word(data[off:]), msg)
	case strings.HasPrefix(msg, "expected keyword "): // a word that starts like true, false, inf or nan
		return off, fmt.Sprintf("%s is not a value (strings need quotes)", word(at))
	case msg == "basic strings cannot have new lines" || msg == "literal strings cannot have new lines" ||
		msg == "unterminated basic string" || msg == "unterminated literal string":
		return off, "unterminated string"
	case msg == "array is incomplete":
		return off, "unterminated list (no closing ])"
	case msg == "expected ',' or ']' after array value":
		return off, fmt.Sprintf("expected , or ] in the list, found %s", word(at))
	case msg == "expected '=' after key":
		return off, "expected = after the key"
	case strings.HasPrefix(msg, "invalid character at start of key"):
		return off, fmt.Sprintf("expected a key, found %s", word(at))
	case strings.HasPrefix(msg, "expected newline but got "):
		return off, fmt.Sprintf("unexpected text %s at the end of the line (text values need quotes)", word(at))
	case strings.HasPrefix(msg, "invalid escape character "):
		return off, fmt.Sprintf("unknown escape %s in a string", perr.Highlight)
	}
	return off, msg
}

// word quotes, for a message, the text at the start of b up to a blank, a comma, a bracket or
// a comment (at least one character, at most 40 bytes).
func word(b []byte) string {
	end := bytes.IndexAny(b, " \t\r\n,]#")
	if end < 0 {
		end = len(b)
	}
	if end == 0 {
		_, end = utf8.DecodeRune(b)
	}
	s := string(b[:end])
	if len(s) > 40 {
		cut := 40
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}

// expression checks a top-level expression (a table header or a key = value) whose offsets are
// relative to start, and adds it to the Doc.
func (w *walker) expression(start int, e *unstable.Node) {
	first, _ := w.extent(e)
	line := w.lineOf(start + first)
	switch e.Kind {
	case unstable.ArrayTable:
		w.errorf(line, "arrays of tables ([[...]]) are not supported in sweep files")
		w.cur = -1
	case unstable.Table:
		w.cur = -1 // entries under a refused header are checked, then dropped
		name, ok := w.key(e, line)
		if !ok {
			return
		}
		if _, dup := w.seen[name]; dup {
			w.errorf(line, "table [%s] is defined twice", name)
			return
		}
		w.seen[name] = map[string]int{}
		w.doc.Tables = append(w.doc.Tables, Table{Name: name, Line: line})
		w.cur = len(w.doc.Tables) - 1
	case unstable.KeyValue:
		key, ok := w.key(e, line)
		if !ok {
			return
		}
		v, ok := w.value(start, e.Value(), false, line)
		if !ok || w.cur < 0 {
			return
		}
		t := &w.doc.Tables[w.cur]
		keys := w.seen[t.Name]
		if first, dup := keys[key]; dup {
			w.errorf(line, "key %q is already set on line %d", key, first)
			return
		}
		keys[key] = line
		t.Entries = append(t.Entries, Entry{Key: key, Value: v, Line: line})
	}
}

// key returns the key of a key = value or a table header: one part, not empty.
func (w *walker) key(e *unstable.Node, line int) (string, bool) {
	it := e.Key()
	it.Next()
	key := string(it.Node().Data)
	switch {
	case key == "":
		w.errorf(line, "empty key")
		return "", false
	case it.Next():
		w.errorf(line, "dotted keys (%s.…) are not supported in sweep files: use a [table]", key)
		return "", false
	}
	return key, true
}

// value converts a value node (offsets relative to start) on the given line; inList for the
// elements of an array.
func (w *walker) value(start int, n *unstable.Node, inList bool, line int) (Value, bool) {
	raw := w.buf[start+int(n.Raw.Offset) : start+int(n.Raw.Offset+n.Raw.Length)]
	if n.Raw.Length > 0 {
		line = w.lineOf(start + int(n.Raw.Offset))
	}
	v := Value{Line: line}
	switch n.Kind {
	case unstable.String:
		if bytes.HasPrefix(raw, []byte(`"""`)) || bytes.HasPrefix(raw, []byte(`'''`)) {
			w.errorf(line, "multi-line strings are not supported in sweep files")
			return Value{}, false
		}
		v.Kind, v.Str = String, string(n.Data)
	case unstable.Bool:
		v.Kind, v.Bool = Bool, string(n.Data) == "true"
	case unstable.Integer:
		i, err := strconv.ParseInt(strings.ReplaceAll(string(n.Data), "_", ""), 0, 64)
		if err != nil {
			w.errorf(line, "%q is not a value (out of the range of a 64-bit integer)", n.Data)
			return Value{}, false
		}
		v.Kind, v.Int = Integer, i
	case unstable.Float:
		s := strings.ReplaceAll(string(n.Data), "_", "")
		if t := strings.TrimLeft(s, "+-"); t == "inf" || t == "nan" {
			w.errorf(line, "%s is not a finite number", n.Data)
			return Value{}, false
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			w.errorf(line, "%q is not a value (out of the range of a float64)", n.Data)
			return Value{}, false
		}
		v.Kind, v.Float = Float, f
	case unstable.LocalTime: // 10:20:5 reads as a time
		w.errorf(line, "dates and times (%s) are not supported in sweep files (a range \"a:b:n\" needs quotes)", n.Data)
		return Value{}, false
	case unstable.LocalDate, unstable.LocalDateTime, unstable.DateTime:
		w.errorf(line, "dates and times (%s) are not supported in sweep files", n.Data)
		return Value{}, false
	case unstable.InlineTable:
		w.errorf(line, "inline tables ({...}) are not supported in sweep files")
		return Value{}, false
	case unstable.Array:
		if inList {
			// An array node has no position of its own: take its first element's.
			for c := n.Child(); c.Valid(); c = c.Child() {
				if c.Raw.Length > 0 {
					line = w.lineOf(start + int(c.Raw.Offset))
					break
				}
			}
			w.errorf(line, "nested lists are not supported in sweep files")
			return Value{}, false
		}
		v.Kind = Array
		for it := n.Children(); it.Next(); {
			e, ok := w.value(start, it.Node(), true, line)
			if !ok {
				return Value{}, false
			}
			v.Elems = append(v.Elems, e)
		}
		for _, e := range v.Elems {
			if numeric(e.Kind) != numeric(v.Elems[0].Kind) || !numeric(e.Kind) && e.Kind != v.Elems[0].Kind {
				w.errorf(e.Line, "a list mixes %s and %s", v.Elems[0].Kind, e.Kind)
				return Value{}, false
			}
		}
	default:
		w.errorf(line, "unexpected %s value", n.Kind)
		return Value{}, false
	}
	return v, true
}

func numeric(k Kind) bool { return k == Integer || k == Float }

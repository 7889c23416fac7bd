// Package sweep holds what `aim sweep` needs beside the commands it runs: the parser of sweep
// files (a subset of TOML, with a line number on every error), the grid of runs a sweep file
// describes and its deterministic shards, and the journal of finished runs that makes a sweep
// resumable after a crash.
package sweep

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
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

func (e Error) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

// Errors is every problem found in a file, in line order.
type Errors []Error

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

// Parse reads the subset of TOML that sweep files use: comments, bare or quoted keys,
// [table] headers, basic and literal strings, integers, floats, booleans, and arrays of
// scalars (over several lines if need be). Dotted keys, inline tables, arrays of tables,
// multi-line strings and dates are refused with an error that says so. Every problem is
// reported, each with its line, as an Errors.
func Parse(src []byte) (*Doc, error) {
	p := &parser{src: string(src), line: 1}
	doc := &Doc{Tables: []Table{{Name: "", Line: 1}}}
	seen := map[string]map[string]int{"": {}}
	cur := &doc.Tables[0]
	if !utf8.ValidString(p.src) {
		return nil, Errors{{0, "the file is not UTF-8 text"}}
	}
	for {
		p.skipBlank()
		if p.eof() {
			break
		}
		line := p.line
		switch p.peek() {
		case '[':
			name, ok := p.tableHeader()
			if !ok {
				p.skipLine()
				continue
			}
			if _, dup := seen[name]; dup {
				p.errorf(line, "table [%s] is defined twice", name)
				p.skipLine()
				// Keep collecting its entries under a throwaway table.
				cur = &Table{Name: name, Line: line}
				continue
			}
			seen[name] = map[string]int{}
			doc.Tables = append(doc.Tables, Table{Name: name, Line: line})
			cur = &doc.Tables[len(doc.Tables)-1]
		default:
			key, ok := p.key()
			if !ok {
				p.skipLine()
				continue
			}
			p.skipSpace()
			if p.eof() || p.peek() != '=' {
				p.errorf(line, "expected = after the key %q", key)
				p.skipLine()
				continue
			}
			p.pos++
			p.skipSpace()
			v, ok := p.value(0)
			if !ok {
				p.skipLine()
				continue
			}
			if !p.endOfLine() {
				p.errorf(p.line, "unexpected text after the value of %q", key)
				p.skipLine()
				continue
			}
			keys := seen[cur.Name]
			if keys == nil { // a duplicated table: entries are checked but dropped
				continue
			}
			if first, dup := keys[key]; dup {
				p.errorf(line, "key %q is already set on line %d", key, first)
				continue
			}
			keys[key] = line
			cur.Entries = append(cur.Entries, Entry{Key: key, Value: v, Line: line})
		}
	}
	return doc, p.errs.sorted()
}

type parser struct {
	src  string
	pos  int
	line int
	errs Errors
}

func (p *parser) errorf(line int, format string, args ...any) {
	p.errs = append(p.errs, Error{line, fmt.Sprintf(format, args...)})
}

func (p *parser) eof() bool  { return p.pos >= len(p.src) }
func (p *parser) peek() byte { return p.src[p.pos] }

// skipSpace skips blanks and tabs on the current line.
func (p *parser) skipSpace() {
	for !p.eof() && (p.peek() == ' ' || p.peek() == '\t') {
		p.pos++
	}
}

// skipBlank skips whitespace, newlines and comments.
func (p *parser) skipBlank() {
	for !p.eof() {
		switch c := p.peek(); {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '\n':
			p.pos++
			p.line++
		case c == '#':
			p.skipComment()
		default:
			return
		}
	}
}

func (p *parser) skipComment() {
	for !p.eof() && p.peek() != '\n' {
		p.pos++
	}
}

// skipLine drops the rest of the current line after an error.
func (p *parser) skipLine() {
	for !p.eof() && p.peek() != '\n' {
		p.pos++
	}
}

// endOfLine reports whether only blanks and a comment remain on the line.
func (p *parser) endOfLine() bool {
	p.skipSpace()
	if !p.eof() && p.peek() == '#' {
		p.skipComment()
	}
	if !p.eof() && p.peek() == '\r' {
		p.pos++
	}
	return p.eof() || p.peek() == '\n'
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// tableHeader reads [name].
func (p *parser) tableHeader() (string, bool) {
	line := p.line
	p.pos++ // [
	if !p.eof() && p.peek() == '[' {
		p.errorf(line, "arrays of tables ([[...]]) are not supported in sweep files")
		return "", false
	}
	p.skipSpace()
	name, ok := p.key()
	if !ok {
		return "", false
	}
	p.skipSpace()
	if p.eof() || p.peek() != ']' {
		p.errorf(line, "table header [%s: expected ]", name)
		return "", false
	}
	p.pos++
	if !p.endOfLine() {
		p.errorf(line, "unexpected text after the table header [%s]", name)
		return "", false
	}
	return name, true
}

// key reads a bare or quoted key; dotted keys are refused.
func (p *parser) key() (string, bool) {
	line := p.line
	var key string
	switch {
	case p.eof():
		p.errorf(line, "expected a key")
		return "", false
	case p.peek() == '"' || p.peek() == '\'':
		v, ok := p.str()
		if !ok {
			return "", false
		}
		key = v.Str
		if key == "" {
			p.errorf(line, "empty key")
			return "", false
		}
	case isBare(p.peek()):
		start := p.pos
		for !p.eof() && isBare(p.peek()) {
			p.pos++
		}
		key = p.src[start:p.pos]
	default:
		p.errorf(line, "expected a key, found %q", p.restOfLine())
		return "", false
	}
	p.skipSpace()
	if !p.eof() && p.peek() == '.' {
		p.errorf(line, "dotted keys (%s.…) are not supported in sweep files: use a [table]", key)
		return "", false
	}
	return key, true
}

// restOfLine returns the text up to the end of the line, shortened for messages.
func (p *parser) restOfLine() string {
	end := strings.IndexByte(p.src[p.pos:], '\n')
	if end < 0 {
		end = len(p.src) - p.pos
	}
	s := strings.TrimSpace(p.src[p.pos : p.pos+end])
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// value reads a value; depth > 0 inside an array.
func (p *parser) value(depth int) (Value, bool) {
	line := p.line
	if p.eof() || p.peek() == '\n' || p.peek() == '#' {
		p.errorf(line, "missing value")
		return Value{}, false
	}
	switch c := p.peek(); {
	case c == '"' || c == '\'':
		return p.str()
	case c == '[':
		if depth > 0 {
			p.errorf(line, "nested lists are not supported in sweep files")
			return Value{}, false
		}
		return p.array()
	case c == '{':
		p.errorf(line, "inline tables ({...}) are not supported in sweep files")
		return Value{}, false
	}
	start := p.pos
	for !p.eof() && !strings.ContainsRune(" \t\r\n,]#", rune(p.peek())) {
		p.pos++
	}
	word := p.src[start:p.pos]
	v := Value{Line: line}
	switch word {
	case "true", "false":
		v.Kind, v.Bool = Bool, word == "true"
		return v, true
	case "inf", "+inf", "-inf", "nan", "+nan", "-nan":
		p.errorf(line, "%s is not a finite number", word)
		return Value{}, false
	}
	if isDate(word) {
		p.errorf(line, "dates and times (%s) are not supported in sweep files", word)
		return Value{}, false
	}
	if i, ok := parseInt(word); ok {
		v.Kind, v.Int = Integer, i
		return v, true
	}
	if f, ok := parseFloat(word); ok {
		v.Kind, v.Float = Float, f
		return v, true
	}
	p.errorf(line, "%q is not a value (strings need quotes)", word)
	return Value{}, false
}

func isDate(w string) bool {
	return len(w) >= 10 && w[4] == '-' && w[7] == '-' && strings.IndexFunc(w[:4], func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// parseInt reads a TOML decimal integer (underscores between digits allowed).
func parseInt(w string) (int64, bool) {
	s, ok := digits(w, false)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i, err == nil
}

// parseFloat reads a finite TOML float.
func parseFloat(w string) (float64, bool) {
	s, ok := digits(w, true)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// digits checks the characters of a number and removes underscores that sit between digits.
func digits(w string, float bool) (string, bool) {
	if w == "" {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= '0' && c <= '9':
		case c == '_':
			if i == 0 || i == len(w)-1 || !isDigit(w[i-1]) || !isDigit(w[i+1]) {
				return "", false
			}
			continue
		case (c == '+' || c == '-') && (i == 0 || float && (w[i-1] == 'e' || w[i-1] == 'E')):
		case float && (c == '.' || c == 'e' || c == 'E'):
		default:
			return "", false
		}
		b.WriteByte(c)
	}
	s := b.String()
	// TOML forbids leading zeros ("007") and a bare point (".5", "1.").
	body := strings.TrimLeft(s, "+-")
	if len(body) > 1 && body[0] == '0' && isDigit(body[1]) {
		return "", false
	}
	if dot := strings.IndexByte(body, '.'); dot >= 0 && (dot == 0 || dot == len(body)-1 || !isDigit(body[dot-1]) || !isDigit(body[dot+1])) {
		return "", false
	}
	return s, body != ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// str reads a basic ("...", with escapes) or literal ('...') string on one line.
func (p *parser) str() (Value, bool) {
	line := p.line
	q := p.peek()
	if strings.HasPrefix(p.src[p.pos:], string([]byte{q, q, q})) {
		p.errorf(line, "multi-line strings are not supported in sweep files")
		return Value{}, false
	}
	p.pos++
	var b strings.Builder
	for {
		if p.eof() || p.peek() == '\n' {
			p.errorf(line, "unterminated string")
			return Value{}, false
		}
		c := p.peek()
		p.pos++
		if c == q {
			return Value{Kind: String, Str: b.String(), Line: line}, true
		}
		if c != '\\' || q == '\'' {
			b.WriteByte(c)
			continue
		}
		if p.eof() {
			p.errorf(line, "unterminated string")
			return Value{}, false
		}
		e := p.peek()
		p.pos++
		switch e {
		case '"', '\\':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'u', 'U':
			n := 4
			if e == 'U' {
				n = 8
			}
			if p.pos+n > len(p.src) {
				p.errorf(line, "short \\%c escape", e)
				return Value{}, false
			}
			r, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(r)) {
				p.errorf(line, "bad \\%c escape %q", e, p.src[p.pos:p.pos+n])
				return Value{}, false
			}
			p.pos += n
			b.WriteRune(rune(r))
		default:
			p.errorf(line, "unknown escape \\%c in a string", e)
			return Value{}, false
		}
	}
}

// array reads [v, v, ...] with newlines, comments and a trailing comma allowed; its elements
// must be scalars of one kind (integers and floats mix, as numbers).
func (p *parser) array() (Value, bool) {
	line := p.line
	p.pos++ // [
	arr := Value{Kind: Array, Line: line}
	for {
		p.skipBlank()
		if p.eof() {
			p.errorf(line, "unterminated list (no closing ])")
			return Value{}, false
		}
		if p.peek() == ']' {
			p.pos++
			break
		}
		v, ok := p.value(1)
		if !ok {
			// Skip to the closing bracket so that later lines are still checked.
			for !p.eof() && p.peek() != ']' {
				if p.peek() == '\n' {
					p.line++
				}
				p.pos++
			}
			if !p.eof() {
				p.pos++
			}
			return Value{}, false
		}
		arr.Elems = append(arr.Elems, v)
		p.skipBlank()
		if p.eof() {
			p.errorf(line, "unterminated list (no closing ])")
			return Value{}, false
		}
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
		default:
			p.errorf(p.line, "expected , or ] in the list, found %q", p.restOfLine())
			return Value{}, false
		}
	}
	for _, e := range arr.Elems {
		if numeric(e.Kind) != numeric(arr.Elems[0].Kind) || !numeric(e.Kind) && e.Kind != arr.Elems[0].Kind {
			p.errorf(e.Line, "a list mixes %s and %s", arr.Elems[0].Kind, e.Kind)
			return Value{}, false
		}
	}
	return arr, true
}

func numeric(k Kind) bool { return k == Integer || k == Float }

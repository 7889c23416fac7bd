package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseValues checks every kind of value the subset reads against its expected Go value.
func TestParseValues(t *testing.T) {
	src := `# a comment
job = "amp"   # trailing comment
out = 'C:\literal'
esc = "a\"b\\c\u00e9"
n = 1_000
neg = -3
f = 2.5e-3
g = -0.5
yes = true
list = [1, 2.5,
  3, # comment inside a list
]
words = ["softmax", "hardmax"]

[grid]
"quoted key" = false
`
	doc, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	root := doc.Tables[0].Entries
	want := map[string]Value{
		"job":  {Kind: String, Str: "amp"},
		"out":  {Kind: String, Str: `C:\literal`},
		"esc":  {Kind: String, Str: "a\"b\\cé"},
		"n":    {Kind: Integer, Int: 1000},
		"neg":  {Kind: Integer, Int: -3},
		"f":    {Kind: Float, Float: 2.5e-3},
		"g":    {Kind: Float, Float: -0.5},
		"yes":  {Kind: Bool, Bool: true},
		"list": {Kind: Array},
	}
	lines := map[string]int{"job": 2, "out": 3, "list": 10, "words": 13}
	for _, e := range root {
		if w, ok := want[e.Key]; ok {
			if e.Value.Kind != w.Kind || e.Value.Str != w.Str || e.Value.Int != w.Int || e.Value.Float != w.Float || e.Value.Bool != w.Bool {
				t.Errorf("%s = %+v, want %+v", e.Key, e.Value, w)
			}
		}
		if l, ok := lines[e.Key]; ok && e.Line != l {
			t.Errorf("%s on line %d, want %d", e.Key, e.Line, l)
		}
		if e.Key == "list" {
			var got []string
			for _, x := range e.Value.Elems {
				got = append(got, x.Text())
			}
			if !slices.Equal(got, []string{"1", "2.5", "3"}) {
				t.Errorf("list = %v", got)
			}
		}
	}
	g := doc.Table("grid")
	if g == nil || g.Line != 15 || len(g.Entries) != 1 || g.Entries[0].Key != "quoted key" || g.Entries[0].Value.Bool {
		t.Errorf("grid table = %+v", g)
	}
}

// TestParseErrors checks that each malformed line is reported with its own line number, all in
// one pass.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		src  string
		want []string // "line N: substring", in order
	}{
		{"a = \n", []string{"line 1: missing value"}},
		{"a = 1\na = 2\n", []string{"line 2: key \"a\" is already set on line 1"}},
		{"x.y = 1\n", []string{"line 1: dotted keys"}},
		{"a = {b = 1}\n", []string{"line 1: inline tables"}},
		{"[[runs]]\n", []string{"line 1: arrays of tables"}},
		{"a = \"open\n", []string{"line 1: unterminated string"}},
		{"a = [1, 2\n", []string{"line 1: unterminated list"}},
		{"a = [1, \"x\"]\n", []string{"line 1: a list mixes"}},
		{"a = [[1]]\n", []string{"line 1: nested lists"}},
		{"a = 1979-05-27\n", []string{"line 1: dates"}},
		{"a = inf\n", []string{"line 1: inf is not a finite number"}},
		{"a = 1e999\n", []string{"line 1: \"1e999\" is not a value"}},
		{"a = softmax\n", []string{"line 1: \"softmax\" is not a value (strings need quotes)"}},
		{"a = 1 2\n", []string{"line 1: unexpected text"}},
		{"a = \"\"\"x\"\"\"\n", []string{"line 1: multi-line strings"}},
		{"a = \"\\q\"\n", []string{"line 1: unknown escape"}},
		{"= 1\n", []string{"line 1: expected a key"}},
		{"ok = 1\nbad\nalso = [1,\n 2 3]\n[t]\n[t]\n", []string{"line 2: expected = after the key", "line 4: expected , or ]", "line 6: table [t] is defined twice"}},
		{"a = 007\n", []string{"line 1: \"007\" is not a value"}},
		{"a = .5\n", []string{"line 1: \".5\" is not a value"}},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.src))
		var es Errors
		if !errors.As(err, &es) {
			t.Errorf("%q: error %v, want Errors", tt.src, err)
			continue
		}
		if len(es) != len(tt.want) {
			t.Errorf("%q: %d errors %v, want %d", tt.src, len(es), es, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(es[i].Error(), w) {
				t.Errorf("%q: error %d = %q, want it to contain %q", tt.src, i, es[i].Error(), w)
			}
		}
	}
}

// TestSpecGrid checks the expansion of a grid (lists, ranges, scalars), the order of points
// and runs, and that the hash ignores where and how a sweep runs but not what it computes.
func TestSpecGrid(t *testing.T) {
	src := `job = "amp"
out = "a"
seeds = 2
seed = 7
device = "cpu"
[grid]
rho = [0.2, 0.5]
alpha = "0.1:0.3:3"
D = 20
channel = "softmax"
`
	s, err := ParseSpec([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Points() != 6 || s.Runs() != 12 {
		t.Fatalf("points %d runs %d, want 6 and 12", s.Points(), s.Runs())
	}
	if got := s.Point(4); !slices.Equal(got, []string{"0.5", "0.2", "20", "softmax"}) {
		t.Errorf("point 4 = %v", got)
	}
	if r := s.Run(5); r.Point != 2 || r.Seed != 8 {
		t.Errorf("run 5 = %+v, want point 2 seed 8", r)
	}
	other, err := ParseSpec([]byte(strings.NewReplacer(`out = "a"`, `out = "b"`, `device = "cpu"`, `parallel = 3`, `"0.1:0.3:3"`, `[0.1, 0.2, 0.3]`).Replace(src)))
	if err != nil {
		t.Fatal(err)
	}
	if other.Hash() != s.Hash() {
		t.Errorf("hash changed with out, device and the list form of the range")
	}
	moved, _ := ParseSpec([]byte(strings.Replace(src, "seed = 7", "seed = 8", 1)))
	if moved.Hash() == s.Hash() {
		t.Errorf("hash did not change with the seed")
	}
}

// TestSpecErrors checks the structural problems ParseSpec reports, all at once with lines.
func TestSpecErrors(t *testing.T) {
	src := `job = 3
colour = "red"
seeds = 0
device = "tpu"
[grid]
alpha = []
rho = "1:0.5:3"
[options]
`
	_, err := ParseSpec([]byte(src))
	want := []string{
		"line 1: job must be a string, not an integer",
		"line 1: no out",
		"line 2: unknown key \"colour\"",
		"line 3: seeds 0",
		"line 4: unknown device \"tpu\"",
		"line 6: alpha: empty list",
		"line 7: rho: range \"1:0.5:3\": start 1 is above end 0.5",
		"line 8: unknown table [options]",
	}
	var es Errors
	if !errors.As(err, &es) || len(es) != len(want) {
		t.Fatalf("errors %v, want %d", err, len(want))
	}
	for i, w := range want {
		if !strings.Contains(es[i].Error(), w) {
			t.Errorf("error %d = %q, want %q", i, es[i].Error(), w)
		}
	}
}

// TestShard checks that n shards partition the runs.
func TestShard(t *testing.T) {
	for _, bad := range []string{"4/4", "-1/4", "1", "a/b", "0/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	count := make([]int, 37)
	for i := 0; i < 4; i++ {
		sh, err := ParseShard(strings.Repeat(" ", i) + string(rune('0'+i)) + "/4")
		if err != nil {
			t.Fatal(err)
		}
		for k := range count {
			if sh.Has(k) {
				count[k]++
			}
		}
		if got := sh.Folder("out/"); got != "out/shard-"+string(rune('0'+i))+"-of-4" {
			t.Errorf("folder %q", got)
		}
	}
	for k, c := range count {
		if c != 1 {
			t.Errorf("run %d is in %d shards", k, c)
		}
	}
}

// TestJournal appends runs, cuts the file at every byte of its last line, and checks that
// reopening keeps exactly the complete lines and drops the cut one with a warning.
func TestJournal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.csv")
	j, recs, warn, err := OpenJournal(path)
	if err != nil || len(recs) != 0 || warn != "" {
		t.Fatal(err, recs, warn)
	}
	cols := []string{"alpha", "error"}
	for k := 0; k < 3; k++ {
		if err := j.Append(cols, Record{Run: k, Point: k / 2, Seed: uint64(1 + k%2), Failed: []string{"", "diverged, at 3"}[k%2], Fields: []string{"0.1", `x,"y"`}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Append([]string{"other", "cols"}, Record{Run: 3, Fields: []string{"a", "b"}}); err == nil {
		t.Error("Append accepted different columns")
	}
	j.Close()
	full, _ := os.ReadFile(path)
	lastStart := strings.LastIndex(strings.TrimSuffix(string(full), "\n"), "\n") + 1
	for cut := lastStart; cut < len(full); cut++ {
		os.WriteFile(path, full[:cut], 0o644)
		j, recs, warn, err := OpenJournal(path)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if len(recs) != 2 || (cut > lastStart && warn == "") {
			t.Errorf("cut at %d: %d records, warning %q", cut, len(recs), warn)
		}
		j.Close()
		if got, _ := os.ReadFile(path); string(got) != string(full[:lastStart]) {
			t.Errorf("cut at %d: file not truncated to its complete lines", cut)
		}
	}
	os.WriteFile(path, full, 0o644)
	_, recs, _, err = OpenJournal(path)
	if err != nil || len(recs) != 3 || recs[2].Fields[1] != `x,"y"` || recs[1].Seed != 2 || recs[1].Failed != "diverged, at 3" || recs[2].Failed != "" {
		t.Fatalf("full journal: %v %+v", err, recs)
	}
	// A corrupt line that is not the last is an error, and so is a run recorded twice.
	bad := strings.Replace(string(full), "\n1,", "\n1,zz,", 1)
	if _, _, _, err := ReadJournal([]byte(bad)); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("corrupt middle line: %v", err)
	}
	dup := string(full) + strings.SplitAfter(string(full), "\n")[1]
	if _, _, _, err := ReadJournal([]byte(dup)); err == nil || !strings.Contains(err.Error(), "already recorded") {
		t.Errorf("duplicate run: %v", err)
	}
}

// FuzzParseSpec checks that no input makes the sweep file parser panic, that every error
// carries a line within the file, and that an accepted file has a non-empty grid of runs.
func FuzzParseSpec(f *testing.F) {
	f.Add([]byte("job = \"amp\"\nout = \"r\"\n[grid]\nalpha = \"0.1:0.2:2\"\nrho = [0.5, 1]\n"))
	f.Add([]byte("a = [1,\n2,]\n[grid]\nx = 'lit'\n"))
	f.Add([]byte("job = \"se\"\nout = \"x\"\n[grid]\n\"k\" = \"\\u00e9\"\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := ParseSpec(src)
		lines := strings.Count(string(src), "\n") + 1
		var es Errors
		if errors.As(err, &es) {
			for _, e := range es {
				if e.Line < 0 || e.Line > lines {
					t.Fatalf("error on line %d of a %d-line file: %v", e.Line, lines, e)
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if s.Runs() < 1 || s.Runs() > MaxRuns {
			t.Fatalf("accepted a sweep of %d runs", s.Runs())
		}
		for _, a := range s.Grid {
			if len(a.Values) == 0 {
				t.Fatalf("accepted an empty axis %q", a.Name)
			}
		}
	})
}

// FuzzReadJournal checks that ReadJournal never panics, that what it accepts has rows of the
// header's width, and that it drops at most the last line.
func FuzzReadJournal(f *testing.F) {
	f.Add([]byte("run,point,seed,failed,alpha\n0,0,1,,0.1\n1,0,2,diverged,0.1\n"))
	f.Add([]byte("run,point,seed,failed,alpha\n0,0,1,,0.1\n1,0,2"))
	f.Add([]byte("run,point,seed,failed,a,b\n0,0,1,,\"x,y\",2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cols, recs, dropped, err := ReadJournal(data)
		if err != nil {
			return
		}
		for _, r := range recs {
			if len(r.Fields) != len(cols) || r.Run < 0 || r.Point < 0 {
				t.Fatalf("record %+v for %d columns", r, len(cols))
			}
		}
		complete := strings.Count(string(data), "\n")
		if dropped == "" && len(recs) > 0 && len(recs) != complete-1 {
			t.Fatalf("%d records from %d complete lines with nothing dropped", len(recs), complete)
		}
	})
}

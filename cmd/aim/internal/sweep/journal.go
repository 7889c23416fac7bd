package sweep

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Record is one finished run in a journal: its index in the sweep, its grid point and seed,
// why it finished without a value (empty when it did not fail), and the row the command
// wrote for it.
type Record struct {
	Run    int
	Point  int
	Seed   uint64
	Failed string
	Fields []string
}

// line returns the record's fields as its journal line holds them.
func (r Record) line() []string {
	return append([]string{strconv.Itoa(r.Run), strconv.Itoa(r.Point), strconv.FormatUint(r.Seed, 10), r.Failed}, r.Fields...)
}

// journalPrefix are the journal's own columns, before the command's.
var journalPrefix = []string{"run", "point", "seed", "failed"}

// ReadJournal parses a journal: a CSV whose first line is "run,point,seed,failed" followed by
// the command's columns, and whose every other line is one finished run. A last line that is
// incomplete (no newline: the write was cut) or malformed is dropped and described in
// dropped; a malformed line anywhere else, or a run recorded twice, is an error. The
// returned columns exclude the journal's own three.
func ReadJournal(data []byte) (columns []string, recs []Record, dropped string, err error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	seen := map[int]int{}
	for i, raw := range lines {
		last := i == len(lines)-1
		lineNo := i + 1
		fail := func(format string, args ...any) error {
			msg := fmt.Sprintf("line %d: %s", lineNo, fmt.Sprintf(format, args...))
			if last {
				dropped = msg
				return nil
			}
			return errors.New(msg)
		}
		if !bytes.HasSuffix(raw, []byte("\n")) {
			if err := fail("incomplete line (no newline: the write was cut)"); err != nil {
				return nil, nil, "", err
			}
			break
		}
		fields, perr := csvLine(raw)
		if perr != nil {
			if err := fail("%v", perr); err != nil {
				return nil, nil, "", err
			}
			break
		}
		if i == 0 {
			if len(fields) <= len(journalPrefix) || !slices.Equal(fields[:len(journalPrefix)], journalPrefix) {
				if err := fail("not a journal header (want run,point,seed,failed,...)"); err != nil {
					return nil, nil, "", err
				}
				break
			}
			columns = fields[len(journalPrefix):]
			continue
		}
		if len(fields) != len(columns)+len(journalPrefix) {
			if err := fail("%d fields, the header has %d", len(fields), len(columns)+len(journalPrefix)); err != nil {
				return nil, nil, "", err
			}
			break
		}
		run, e1 := strconv.Atoi(fields[0])
		point, e2 := strconv.Atoi(fields[1])
		seed, e3 := strconv.ParseUint(fields[2], 10, 64)
		if e1 != nil || e2 != nil || e3 != nil || run < 0 || point < 0 {
			if err := fail("bad run, point or seed %q", fields[:3]); err != nil {
				return nil, nil, "", err
			}
			break
		}
		if first, dup := seen[run]; dup {
			return nil, nil, "", fmt.Errorf("line %d: run %d is already recorded on line %d (two sweeps wrote this folder?)", lineNo, run, first)
		}
		seen[run] = lineNo
		recs = append(recs, Record{Run: run, Point: point, Seed: seed, Failed: fields[3], Fields: fields[len(journalPrefix):]})
	}
	return columns, recs, dropped, nil
}

// csvLine parses one CSV line that holds exactly one record.
func csvLine(line []byte) ([]string, error) {
	r := csv.NewReader(bytes.NewReader(line))
	r.FieldsPerRecord = -1
	fields, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("not a CSV line: %v", err)
	}
	return fields, nil
}

// Journal appends finished runs to a journal file, one line per run, each written in one
// call and synced to disk before Append returns.
type Journal struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	columns []string // nil until the file has a header
}

// OpenJournal opens the journal at path, creating it if need be, and returns the runs it
// already records. A corrupt last line is dropped: the file is rewritten without it (through a
// temporary file and a rename) and warning says what was dropped.
func OpenJournal(path string) (j *Journal, recs []Record, warning string, err error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, "", fmt.Errorf("journal %s: %w", path, err)
	}
	columns, recs, dropped, err := ReadJournal(data)
	if err != nil {
		return nil, nil, "", fmt.Errorf("journal %s: %w", path, err)
	}
	if dropped != "" {
		warning = fmt.Sprintf("journal %s: dropped its corrupt last %s", path, dropped)
		good := data[:bytes.LastIndexByte(bytes.TrimSuffix(data, []byte("\n")), '\n')+1]
		if err := WriteFileAtomic(path, good); err != nil {
			return nil, nil, "", err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, "", fmt.Errorf("journal %s: %w", path, err)
	}
	return &Journal{path: path, f: f, columns: columns}, recs, warning, nil
}

// Columns returns the command's columns the journal records, or nil before the first run.
func (j *Journal) Columns() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.columns
}

// Append records a finished run whose row has the given columns; the first run of a new
// journal writes the header too. Columns that differ from the journal's are an error.
func (j *Journal) Append(columns []string, r Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(columns) != len(r.Fields) {
		return fmt.Errorf("journal %s: run %d has %d fields for %d columns", j.path, r.Run, len(r.Fields), len(columns))
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if j.columns == nil {
		w.Write(append(slices.Clone(journalPrefix), columns...))
	} else if !slices.Equal(j.columns, columns) {
		return fmt.Errorf("journal %s: run %d has columns %v, the journal %v", j.path, r.Run, columns, j.columns)
	}
	for _, f := range append([]string{r.Failed}, r.Fields...) {
		if strings.ContainsAny(f, "\r\n") {
			return fmt.Errorf("journal %s: run %d has a field with a line break", j.path, r.Run)
		}
	}
	w.Write(r.line())
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if j.columns == nil {
		j.columns = slices.Clone(columns)
	}
	return nil
}

// Close closes the file.
func (j *Journal) Close() error { return j.f.Close() }

// WriteFileAtomic replaces path with data: it writes a temporary file beside it, syncs it,
// renames it into place and syncs the folder, so a crash leaves the old file or the new one.
func WriteFileAtomic(path string, data []byte) error {
	return writeAtomic(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// writeAtomic is WriteFileAtomic with the content written by write.
func writeAtomic(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	bw := bufio.NewWriter(f)
	werr := write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(f.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, werr)
	}
	syncDir(dir)
	return nil
}

// syncDir syncs a folder, so that a rename in it survives a crash.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

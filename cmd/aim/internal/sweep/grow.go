package sweep

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/aimtheory/aim/cmd/aim/internal/job"
)

// A sweep grows: a folder written from one sweep file is resumed from another that has the
// same job, the same trace setting and the same grid keys in the same order, and whose runs
// include every run the folder records, a run being its grid values and its seed. More seeds,
// an earlier first seed, or more values of any key (anywhere in its list) grow a sweep; a file
// that lacks a recorded run, or changes the job, the trace or the keys, is another sweep and
// is refused. Each recorded run keeps its row and its trace and takes its index in the grown
// sweep; only the new runs are computed.
//
// The renumbered journal is written beside the old one as .journal-<hash>.csv, <hash> the
// grown sweep's; then the manifest of the grown sweep (the commit); then the journal replaces
// journal.csv. A growth killed before the commit leaves the folder as it was (the next
// Execute, of either file, removes the renumbered journal), one killed after it leaves the
// grown sweep's manifest, and the next Execute of that file completes the rename
// (completeGrowth).

// pendingJournal is where a growth to the sweep of hash keeps its renumbered journal until
// the manifest of that sweep is written.
func pendingJournal(dir, hash string) string {
	return filepath.Join(dir, ".journal-"+hash+".csv")
}

// completeGrowth finishes a growth to the sweep of hash that was cut after its commit, and
// removes what growths cut before theirs left.
func completeGrowth(dir, hash string) error {
	pending, _ := filepath.Glob(filepath.Join(dir, ".journal-*.csv"))
	for _, f := range pending {
		if f != pendingJournal(dir, hash) {
			os.Remove(f)
			continue
		}
		if err := os.Rename(f, filepath.Join(dir, "journal.csv")); err != nil {
			return fmt.Errorf("complete the growth of %s: %w", dir, err)
		}
		syncDir(dir)
	}
	return nil
}

// State says what the folder of shard sh holds for this sweep, without changing it: how many
// of the shard's runs are done and how many are left, and, where the folder was written from a
// sweep file this one grows (Execute would grow it), that file's spec hash. A folder this sweep
// may not run into gives the error Execute would.
func (p *Plan) State(sh Shard) (done, todo int, grownFrom string, err error) {
	dir := sh.Folder(p.Spec.Out)
	runs := 0
	for k := 0; k < p.Spec.Runs(); k++ {
		if sh.Has(k) {
			runs++
		}
	}
	old, err := ReadManifest(filepath.Join(dir, "results.json"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, runs, "", nil
	} else if err != nil {
		return 0, 0, "", err
	}
	var recs []Record
	switch {
	case old.SpecHash != p.Spec.Hash():
		if _, recs, _, err = p.renumber(dir, sh, old); err != nil {
			return 0, 0, "", err
		}
		grownFrom = old.SpecHash
	case old.Shards > 1: // the shards merged
		return old.Done, runs - old.Done, "", nil
	default:
		jpath := filepath.Join(dir, "journal.csv")
		if _, err := os.Stat(pendingJournal(dir, old.SpecHash)); err == nil { // a growth to complete
			jpath = pendingJournal(dir, old.SpecHash)
		}
		data, err := os.ReadFile(jpath)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, 0, "", err
		}
		if _, recs, _, err = ReadJournal(data); err != nil {
			return 0, 0, "", fmt.Errorf("journal %s: %w", jpath, err)
		}
	}
	for _, r := range recs {
		if sh.Has(r.Run) && r.Run < p.Spec.Runs() {
			done++
		}
	}
	return done, runs - done, grownFrom, nil
}

// renumber reads the journal of the folder dir, whose manifest old was written from another
// sweep file, and returns its columns and its runs numbered in the plan's sweep, with what it
// dropped of a corrupt last line; it refuses a sweep the folder's does not grow into. See "A
// sweep grows" above.
func (p *Plan) renumber(dir string, sh Shard, old *Manifest) (columns []string, recs []Record, dropped string, err error) {
	s := p.Spec
	refuse := func(format string, args ...any) ([]string, []Record, string, error) {
		return nil, nil, "", job.Inputf("%s holds the results of another sweep (spec %s, this file %s): %s; use another out, or remove the folder",
			dir, old.SpecHash, s.Hash(), fmt.Sprintf(format, args...))
	}
	prev, err := ParseSpec([]byte(old.Spec))
	if err != nil {
		return refuse("its sweep file does not parse (%v)", err)
	}
	keys := func(s *Spec) []string {
		names := make([]string, len(s.Grid))
		for i, a := range s.Grid {
			names[i] = a.Name
		}
		return names
	}
	switch {
	case prev.Job != s.Job:
		return refuse("its job is %s", prev.Job)
	case prev.Trace != s.Trace:
		return refuse("trace = %t there", prev.Trace)
	case !slices.Equal(keys(prev), keys(s)):
		return refuse("its grid keys are %s", strings.Join(keys(prev), ", "))
	case !sh.Whole() || old.Shards > 1:
		return refuse("a sharded sweep does not grow")
	}
	jpath := filepath.Join(dir, "journal.csv")
	data, err := os.ReadFile(jpath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, "", fmt.Errorf("journal %s: %w", jpath, err)
	}
	columns, recs, dropped, err = ReadJournal(data)
	if err != nil {
		return nil, nil, "", fmt.Errorf("journal %s: %w", jpath, err)
	}
	points := map[string]int{}
	for k := s.Points() - 1; k >= 0; k-- { // the first of repeated values
		points[s.Describe(k)] = k
	}
	taken := map[int]bool{}
	var lost []string
	for i, r := range recs {
		if r.Point >= prev.Points() {
			return nil, nil, "", fmt.Errorf("journal %s: run %d is at point %d, its sweep has %d", jpath, r.Run, r.Point, prev.Points())
		}
		at := prev.Describe(r.Point)
		k, ok := points[at]
		if !ok || r.Seed < s.Seed || r.Seed-s.Seed >= uint64(s.Seeds) || taken[k*s.Seeds+int(r.Seed-s.Seed)] {
			lost = append(lost, fmt.Sprintf("seed %d at %s", r.Seed, at))
			continue
		}
		recs[i].Run, recs[i].Point = k*s.Seeds+int(r.Seed-s.Seed), k
		taken[recs[i].Run] = true
	}
	if len(lost) > 0 {
		more := ""
		if len(lost) > 1 {
			more = fmt.Sprintf(", and %d more", len(lost)-1)
		}
		return refuse("it holds runs this file does not have (%s%s), and a sweep grows by seeds and grid values without losing runs", lost[0], more)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Run < recs[j].Run })
	return columns, recs, dropped, nil
}

// grow carries the runs of the folder dir, whose manifest old was written from another sweep
// file, into the plan's sweep (renumber), whose manifest man it writes as the commit, and
// returns how many runs it kept. See "A sweep grows" above.
func (p *Plan) grow(dir string, sh Shard, old, man *Manifest, stderr io.Writer) (int, error) {
	columns, recs, dropped, err := p.renumber(dir, sh, old)
	if err != nil {
		return 0, err
	}
	if dropped != "" {
		fmt.Fprintf(stderr, "aim sweep: warning: journal %s: dropped its corrupt last %s\n", filepath.Join(dir, "journal.csv"), dropped)
	}
	if err := completeGrowth(dir, ""); err != nil { // what earlier growths left uncommitted
		return 0, err
	}
	man.GrownFrom = append(man.GrownFrom, old.SpecHash)
	if len(recs) > 0 {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		w.Write(append(slices.Clone(journalPrefix), columns...))
		for _, r := range recs {
			w.Write(r.line())
		}
		w.Flush()
		if err := WriteFileAtomic(pendingJournal(dir, man.SpecHash), buf.Bytes()); err != nil {
			return 0, err
		}
	}
	if err := writeManifest(filepath.Join(dir, "results.json"), man); err != nil {
		return 0, err
	}
	if err := completeGrowth(dir, man.SpecHash); err != nil {
		return 0, err
	}
	// The old sweep's tables; the grown sweep writes its own when every run is done.
	os.Remove(filepath.Join(dir, "results.csv"))
	os.Remove(filepath.Join(dir, "trace.csv"))
	return len(recs), nil
}

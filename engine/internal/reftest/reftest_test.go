package reftest

import (
	"io/fs"
	"testing"
)

// TestEmbedded checks that the embedded copy holds every published curve the tests read, with
// the columns they use, so that a clone of the repository runs the reference tests unskipped.
func TestEmbedded(t *testing.T) {
	if override() != "" {
		t.Skip("AIM_REFERENCE is set: the embedded copy is not the one in use")
	}
	want := map[string][]string{
		"aim/SE_softmax":          {"alpha", "mmse", "q"},
		"aim/SE_hardmax":          {"alpha", "mmse", "q"},
		"aim/SE_hardmax_rescaled": {"alpha", "mmse"},
		"smi":                     nil,
	}
	files := 0
	for dir, cols := range want {
		entries, err := fs.ReadDir(data, embeddedRoot+"/"+dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			files++
			c := Columns(t, Path(t, dir, e.Name()))
			for _, k := range cols {
				if len(c[k]) == 0 {
					t.Errorf("%s/%s: no column %q", dir, e.Name(), k)
				}
			}
		}
	}
	smi := map[string][]string{
		"BO_2w.csv":                     {"alpha", "Q11", "Q22"},
		"gen_error_BO_2w.csv":           {"alpha", "gen_error"},
		"gen_error_BO_2w_one_layer.csv": {"alpha", "gen_error"},
		"alpha_critical.csv":            {"skip", "alpha1", "alpha2"},
	}
	for f, cols := range smi {
		c := Columns(t, Path(t, "smi", f))
		for _, k := range cols {
			if len(c[k]) == 0 {
				t.Errorf("smi/%s: no column %q", f, k)
			}
		}
	}
	if files != 23 {
		t.Errorf("%d reference files, want 23 (19 AIM, 4 SMI)", files)
	}
}

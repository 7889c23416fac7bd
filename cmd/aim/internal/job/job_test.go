package job

import (
	"errors"
	"strings"
	"testing"
)

// TestValidate checks that aim plot refuses a bad configuration with the message of the
// command line, as bad input.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  interface{ Validate() error }
		want string
	}{
		{&PlotConfig{Files: []string{"a.csv"}, X: "beta", Axes: "auto"}, `--x "beta": want alpha, alpha-bar, alpha-rho or auto`},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !IsInput(err) {
			t.Errorf("%T: %v; want bad input saying %q", tc.cfg, err, tc.want)
		}
	}
}

// TestFailures checks the message of failed rows, which the sweep's journal records.
func TestFailures(t *testing.T) {
	if err := Failures(nil, 3, "runs diverged"); err != nil {
		t.Errorf("no failures: %v", err)
	}
	err := Failures([]string{"rho 0.5 alpha 0.1 seed 3: x", "rho 1 alpha 0.1 seed 3: y"}, 4, "runs diverged")
	want := "2 of 4 runs diverged (written with converged=false and no values):\n  rho 0.5 alpha 0.1 seed 3: x\n  rho 1 alpha 0.1 seed 3: y"
	if err == nil || err.Error() != want || IsInput(err) {
		t.Errorf("%v, want %q (not bad input)", err, want)
	}
	if e := Inputf("x %d", 1); !IsInput(e) || !IsInput(errors.Join(e)) || e.Error() != "x 1" {
		t.Errorf("Inputf: %v", e)
	}
}

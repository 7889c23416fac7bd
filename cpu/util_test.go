package cpu

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func fmtSprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func writeTemp(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// neumaier is compensated (Kahan-Babuska-Neumaier) summation for reference sums.
type neumaier struct{ s, c float64 }

func (k *neumaier) add(v float64) {
	t := k.s + v
	if math.Abs(k.s) >= math.Abs(v) {
		k.c += (k.s - t) + v
	} else {
		k.c += (v - t) + k.s
	}
	k.s = t
}

func (k *neumaier) sum() float64 { return k.s + k.c }

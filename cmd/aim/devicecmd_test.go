package main

import (
	"strings"
	"testing"

	"github.com/aimtheory/aim/cpu"
)

// TestDeviceBLAS checks the BLAS line of `aim device`: gonum when AIM_BLAS=gonum says so and
// why; by default the native library with its core type and thread count (--threads applies),
// or, without one, gonum and the reason; a bad --threads is a usage error.
func TestDeviceBLAS(t *testing.T) {
	t.Setenv("AIM_LIBCUDA", "/nonexistent/libcuda.so.1")
	t.Setenv(cpu.EnvBLAS, "gonum")
	code, stdout, stderr := runArgs(t, "device")
	if code != 0 || !strings.Contains(stdout, "blas: gonum v0.17 (pure Go BLAS/LAPACK); chosen by AIM_BLAS=gonum") {
		t.Errorf("AIM_BLAS=gonum: status %d\n%s%s", code, stdout, stderr)
	}
	t.Setenv(cpu.EnvBLAS, "")
	native, err := cpu.Open(cpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runArgs(t, "device", "--threads", "1")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if b := native.BLAS(); b.Native {
		for _, want := range []string{"blas: " + b.Lib.Provider, b.Lib.Path, "1 thread", "cpu: "} {
			if !strings.Contains(stdout, want) {
				t.Errorf("aim device --threads 1 lacks %q:\n%s", want, stdout)
			}
		}
		if b.Lib.Core != "" && !strings.Contains(stdout, "core "+b.Lib.Core) {
			t.Errorf("aim device lacks the core type %s:\n%s", b.Lib.Core, stdout)
		}
	} else if !strings.Contains(stdout, "no OpenBLAS or MKL found") {
		t.Errorf("without a native BLAS, aim device does not say so:\n%s", stdout)
	}
	if code, _, stderr := runArgs(t, "device", "--threads", "-2"); code != 2 || !strings.Contains(stderr, "--threads -2") {
		t.Errorf("aim device --threads -2: status %d, %q", code, stderr)
	}
	if code, _, stderr := runArgs(t, "amp", "--quiet", "--threads", "-1"); code != 2 || !strings.Contains(stderr, "--threads -1") {
		t.Errorf("aim amp --threads -1: status %d, %q", code, stderr)
	}
}

package backend

import (
	"strings"
	"testing"
)

// TestFallback proves the fallback: with no libcuda (AIM_LIBCUDA points nowhere), auto selects
// the CPU and says why, and cuda is an error that names the library.
func TestFallback(t *testing.T) {
	t.Setenv("AIM_LIBCUDA", "/nonexistent/libcuda.so.1")
	dev, note, err := Open("auto", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(dev)
	if dev.Info().Name != "cpu" || !strings.Contains(note, "CUDA is not usable") || !strings.Contains(note, "libcuda") {
		t.Errorf("auto chose %s: %q; want the CPU and the reason naming libcuda", dev.Info().Name, note)
	}
	if _, _, err := Open("cuda", 1); err == nil || !strings.Contains(err.Error(), "libcuda") {
		t.Errorf("Open(cuda) = %v, want an error naming libcuda", err)
	}
	if _, _, err := Open("tpu", 1); err == nil {
		t.Error("Open(tpu) succeeded")
	}
	cpuDev, note, err := Open("cpu", 2)
	if err != nil || cpuDev.Info().Name != "cpu" || !strings.Contains(note, "2 goroutines") {
		t.Errorf("Open(cpu, 2) = %v, %q, %v", cpuDev, note, err)
	}
}

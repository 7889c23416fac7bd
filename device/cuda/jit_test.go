package cuda

import (
	"strings"
	"testing"
	"unsafe"
)

// TestJITLogs checks the option arrays of cuModuleLoadDataEx (the CUjit_option values of
// cuda.h) and the decoding of the logs the driver writes into them (simulated here).
func TestJITLogs(t *testing.T) {
	l := newJITLogs(256)
	if l.options != [4]int32{3, 4, 5, 6} {
		t.Errorf("options %v, want CU_JIT_INFO_LOG_BUFFER, _SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER, _SIZE_BYTES = 3, 4, 5, 6", l.options)
	}
	if l.values[0] != uintptr(unsafe.Pointer(&l.info[0])) || l.values[1] != 256 ||
		l.values[2] != uintptr(unsafe.Pointer(&l.err[0])) || l.values[3] != 256 {
		t.Errorf("values %v", l.values)
	}
	if s := l.text(); s != "" {
		t.Errorf("empty logs give %q", s)
	}
	// The driver writes a NUL-terminated log at values[2] (= &l.err[0], checked above) and the
	// bytes used into the size slot.
	msg := "ptxas application ptx input, line 7; error   : Unknown symbol 'bogus'\n"
	copy(l.err, msg+"\x00")
	l.values[3] = uintptr(len(msg) + 1)
	l.values[1] = 0
	if s, want := l.text(), "error log: "+strings.TrimSpace(msg); s != want {
		t.Errorf("text %q, want %q", s, want)
	}
	copy(l.info, "info: 12 registers\x00")
	l.values[1] = 19
	if s := l.text(); !strings.HasSuffix(s, "; info log: info: 12 registers") {
		t.Errorf("text with both logs %q", s)
	}
	for _, c := range []struct {
		b      string
		filled uintptr
		want   string
	}{
		{"abc\x00def", 8, "abc"}, {"abcdef", 3, "abc"}, {"abc", 1000, "abc"}, {"  a b \n", 7, "a b"}, {"\x00", 1, ""},
	} {
		if got := logString([]byte(c.b), c.filled); got != c.want {
			t.Errorf("logString(%q, %d) = %q, want %q", c.b, c.filled, got, c.want)
		}
	}
}

// TestGPUJITErrorLog loads a PTX module that does not compile on the GPU and checks that the
// error carries the JIT's log (which names the problem), not only CUDA_ERROR_INVALID_PTX.
func TestGPUJITErrorLog(t *testing.T) {
	g := gpu(t)
	bad := []byte(".version 7.8\n.target sm_80\n.address_size 64\n\n.visible .entry broken()\n{\n\tbogus.instruction %r1;\n\tret;\n}\n")
	var err error
	if derr := g.b.do(func() error { _, _, err = g.b.loadPTX("broken", bad); return nil }); derr != nil {
		t.Fatal(derr)
	}
	t.Logf("loading broken PTX: %v", err)
	if err == nil {
		t.Fatal("broken PTX loaded")
	}
	if !strings.Contains(err.Error(), "PTX module broken") || !strings.Contains(err.Error(), "cuModuleLoadDataEx") ||
		!strings.Contains(err.Error(), "JIT error log: ") {
		t.Errorf("error %q lacks the module, the call or the JIT's error log", err)
	}
	// The device still works.
	w := up(t, g, []float64{3, 4})
	defer g.Free(w)
	if s, err := g.Dot(w, w); err != nil || s != 25 {
		t.Errorf("Dot after a failed module load: %v, %v", s, err)
	}
}

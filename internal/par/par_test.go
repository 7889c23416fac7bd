package par

import (
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
)

func TestChunksSpan(t *testing.T) {
	for _, tc := range []struct{ n, size, chunks, lastLo, lastHi int }{
		{10, 3, 4, 9, 10}, {9, 3, 3, 6, 9}, {1, 64, 1, 0, 1}, {0, 8, 0, 0, 0},
	} {
		if got := Chunks(tc.n, tc.size); got != tc.chunks {
			t.Errorf("Chunks(%d, %d) = %d, want %d", tc.n, tc.size, got, tc.chunks)
		}
		if tc.chunks > 0 {
			if lo, hi := Span(tc.chunks-1, tc.n, tc.size); lo != tc.lastLo || hi != tc.lastHi {
				t.Errorf("Span(last, %d, %d) = [%d, %d), want [%d, %d)", tc.n, tc.size, lo, hi, tc.lastLo, tc.lastHi)
			}
		}
	}
}

// TestMapReduceWorkers sums values whose floating-point sum depends on the order, and requires
// the same bits for 1 to 9 workers, and the exact sequential chunk-order sum.
func TestMapReduceWorkers(t *testing.T) {
	const n, size = 10007, 64
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Sin(float64(i)) * math.Pow(10, float64(i%17-8))
	}
	want := 0.0
	for c := 0; c < Chunks(n, size); c++ {
		lo, hi := Span(c, n, size)
		s := 0.0
		for _, v := range x[lo:hi] {
			s += v
		}
		want += s
	}
	for w := 1; w <= 9; w++ {
		var states atomic.Int32
		got, err := MapReduce(w, Chunks(n, size), func() (*[]float64, error) {
			states.Add(1)
			buf := make([]float64, 1)
			return &buf, nil
		}, func(buf *[]float64, c int) (float64, error) {
			lo, hi := Span(c, n, size)
			(*buf)[0] = 0
			for _, v := range x[lo:hi] {
				(*buf)[0] += v
			}
			return (*buf)[0], nil
		}, 0, func(a, b float64) float64 { return a + b })
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%d workers: sum %v, want %v (bit for bit)", w, got, want)
		}
		if s := states.Load(); s < 1 || int(s) > w {
			t.Errorf("%d workers: %d states made, want 1..%d", w, s, w)
		}
	}
}

// TestForErrors: the lowest failing chunk's error is returned whatever the workers, panics
// become errors, and a state error is returned.
func TestForErrors(t *testing.T) {
	errAt := func(c int) error { return errors.New("chunk " + string(rune('0'+c))) }
	for w := 1; w <= 4; w++ {
		err := For(w, 10, NoState, func(_ struct{}, c int) error {
			if c == 3 || c == 7 {
				return errAt(c)
			}
			return nil
		})
		// Chunk 3 always starts before chunk 7 can stop the handout only if it was handed out;
		// chunks are handed out in order, so 3 is handed out before 7 and always runs.
		if err == nil || err.Error() != "chunk 3" {
			t.Errorf("%d workers: error %v, want chunk 3", w, err)
		}
		err = For(w, 5, NoState, func(_ struct{}, c int) error {
			if c == 2 {
				panic("boom")
			}
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "panic in chunk 2: boom") {
			t.Errorf("%d workers: panic gave %v", w, err)
		}
		err = For(w, 5, func() (int, error) { return 0, errors.New("no scratch") }, func(int, int) error { return nil })
		if err == nil || err.Error() != "no scratch" {
			t.Errorf("%d workers: state error gave %v", w, err)
		}
	}
	if err := For(3, 0, NoState, func(struct{}, int) error { t.Error("body ran for nc = 0"); return nil }); err != nil {
		t.Error(err)
	}
}

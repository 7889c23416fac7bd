package aim

import (
	"math"
	"testing"
)

func TestSoftmaxFisherSum(t *testing.T) {
	for _, T := range []int{2, 3, 4} {
		s, _ := NewSoftmax(T, 2)
		K := float64(T*T + T - 2)
		for _, V := range []float64{0.1, 1, 3} {
			if got, err := s.FisherSum(0.7, V); err != nil || got != K/(2*V) {
				t.Errorf("T %d V %g: FisherSum = %g, %v; want K/(2V) = %g", T, V, got, err, K/(2*V))
			}
		}
		if _, err := s.FisherSum(0.5, 0); err == nil {
			t.Errorf("FisherSum accepted V = 0")
		}
	}
	for _, c := range []struct {
		T    int
		beta float64
	}{{1, 1}, {2, 0}, {2, -1}, {2, math.NaN()}, {2, math.Inf(1)}} {
		if _, err := NewSoftmax(c.T, c.beta); err == nil {
			t.Errorf("NewSoftmax(%d, %g) accepted", c.T, c.beta)
		}
	}
}

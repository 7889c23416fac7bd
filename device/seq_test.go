package device

import (
	"errors"
	"testing"
)

// TestSeqStops: the operations after the first failure do not run, and its error is returned.
func TestSeqStops(t *testing.T) {
	var ran []int
	op := func(i int, err error) func() error {
		return func() error { ran = append(ran, i); return err }
	}
	boom := errors.New("boom")
	if err := Seq(op(1, nil), op(2, boom), op(3, nil)); !errors.Is(err, boom) {
		t.Errorf("error %v, want boom", err)
	}
	if len(ran) != 2 || ran[0] != 1 || ran[1] != 2 {
		t.Errorf("ran %v, want [1 2]", ran)
	}
	if err := Seq(); err != nil {
		t.Errorf("empty Seq: %v", err)
	}
}

package job

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestForPointsAbandons checks that an interruption returns at once with the points finished,
// in point order, while a point in flight never ends, and that no point starts after it.
func TestForPointsAbandons(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	defer close(block)
	var mu sync.Mutex
	started := map[int]bool{}
	returned := make(chan []bool)
	go func() {
		_, done, err := ForPoints(ctx, 1, 6, noProgress{}, func(i int) int {
			mu.Lock()
			started[i] = true
			mu.Unlock()
			if i == 2 {
				cancel()
				<-block // never ends before forPoints returns
			}
			return i * i
		})
		if err != nil {
			t.Error(err)
		}
		returned <- done
	}()
	select {
	case done := <-returned:
		if !slices.Equal(done, []bool{true, true, false, false, false, false}) {
			t.Errorf("done %v, want the first two points", done)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("forPoints waited for the point in flight")
	}
	mu.Lock()
	defer mu.Unlock()
	if started[3] {
		t.Error("a point started after the interruption")
	}
	res, done, err := ForPoints(context.Background(), 3, 5, noProgress{}, func(i int) int { return i * i })
	if err != nil || !slices.Equal(res, []int{0, 1, 4, 9, 16}) || slices.Contains(done, false) {
		t.Errorf("uninterrupted: %v %v %v", res, done, err)
	}
}

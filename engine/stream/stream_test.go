package stream

import "testing"

// TestLayout: the ranges are in the documented order and each is as large as its comment says,
// so that no draw can reach the next one: the training tokens have 2^51 normals, each test set
// 2^50, a restart's start 2^40, and 2^19 restarts fit below the SE's shift.
func TestLayout(t *testing.T) {
	ranges := []struct {
		name        string
		start, size uint64
	}{
		{"Teacher", Teacher, 1 << 52},
		{"Data", Data, 1 << 51},
		{"SMISGDTest", SMISGDTest, 1 << 50},
		{"SMIAMPTest", SMIAMPTest, 1 << 50},
		{"Init/Restart", Init, Restart(1<<19) - Init},
		{"SMISEShift", SMISEShift, 1 << 20},
		{"SMISEDraws", SMISEDraws, SMISEDraw(1<<34, 0) - SMISEDraws},
		{"SMINoise", SMINoise, 1 << 61},
		{"AIMNoise", AIMNoise, 1 << 61},
		{"SMIAMPDraws", SMIAMPDraws, SMIAMPDraw(1, 1<<41-1, 0) - SMIAMPDraws},
	}
	for i := 1; i < len(ranges); i++ {
		prev, r := ranges[i-1], ranges[i]
		if prev.start+prev.size > r.start {
			t.Errorf("%s [%d, +%d) runs into %s at %d", prev.name, prev.start, prev.size, r.name, r.start)
		}
	}
	if Restart(0) != Init || Restart(3)-Restart(2) != 1<<40 {
		t.Errorf("Restart: %d, stride %d", Restart(0), Restart(3)-Restart(2))
	}
	if SMISEDraw(2, 1)-SMISEDraw(2, 0) != SMISEDrawNormals || SMISEDraw(3, 0)-SMISEDraw(2, 1) != SMISEDrawNormals {
		t.Errorf("SMISEDraw: strides %d, %d", SMISEDraw(2, 1)-SMISEDraw(2, 0), SMISEDraw(3, 0)-SMISEDraw(2, 1))
	}
	if SMIAMPDraw(2, 10, 3)-SMIAMPDraws != 13*SMIAMPDrawNormals {
		t.Errorf("SMIAMPDraw(2, 10, 3) = SMIAMPDraws + %d", SMIAMPDraw(2, 10, 3)-SMIAMPDraws)
	}
	if SMISESample(3, 24) != 72 {
		t.Errorf("SMISESample(3, 24) = %d, want 72", SMISESample(3, 24))
	}
}

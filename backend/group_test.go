package backend

import (
	"reflect"
	"strings"
	"testing"
)

// TestParse reads every form of --device, and refuses malformed lists, duplicates and mixtures
// with a message that says which.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		name string
		want Spec
		err  string
	}{
		{"auto", Spec{Kind: "auto"}, ""},
		{"cpu", Spec{Kind: "cpu", CPUs: 1}, ""},
		{"cpu:3", Spec{Kind: "cpu", CPUs: 3}, ""},
		{"cuda", Spec{Kind: "cuda", Ordinals: []int{0}}, ""},
		{"cuda:2", Spec{Kind: "cuda", Ordinals: []int{2}}, ""},
		{"cuda:1,0,3", Spec{Kind: "cuda", Ordinals: []int{1, 0, 3}}, ""},
		{"cuda:all", Spec{Kind: "cuda", All: true}, ""},
		{"cuda:0,0", Spec{}, "GPU 0 is listed twice"},
		{"cuda:0,1,1", Spec{}, "GPU 1 is listed twice"},
		{"cuda:0,cpu", Spec{}, "cannot mix cpu and cuda"},
		{"cpu,cuda:0", Spec{}, "cannot mix cpu and cuda"},
		{"cpu:cuda", Spec{}, "cannot mix cpu and cuda"},
		{"cuda:", Spec{}, "not a GPU ordinal"},
		{"cuda:-1", Spec{}, "not a GPU ordinal"},
		{"cuda:x", Spec{}, "not a GPU ordinal"},
		{"cpu:0", Spec{}, "K >= 1"},
		{"auto:2", Spec{}, "auto takes no list"},
		{"tpu", Spec{}, "unknown device"},
	} {
		got, err := Parse(c.name)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) = %+v, %v; want an error containing %q", c.name, got, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

// TestOpenGroup: cpu:K opens K CPU devices summing through the host; a GPU list on a machine
// without CUDA says why; a group name is refused where one device is wanted.
func TestOpenGroup(t *testing.T) {
	t.Setenv("AIM_LIBCUDA", "/nonexistent/libcuda.so.1")
	g, note, err := OpenGroupThreads("cpu:3", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Len() != 3 || g.Sum.Name() != "host" || g.Concurrent || !strings.Contains(note, "group of 3 devices, sums host") {
		t.Errorf("cpu:3: %d members, sums %s, concurrent %v, note %q", g.Len(), g.Sum.Name(), g.Concurrent, note)
	}
	for _, name := range []string{"cuda:0,1", "cuda:all", "cuda:1"} {
		if _, _, err := OpenGroupThreads(name, 1, 1); err == nil || !strings.Contains(err.Error(), "libcuda") {
			t.Errorf("OpenGroup(%q) without CUDA: %v, want an error naming libcuda", name, err)
		}
	}
	if _, _, err := OpenThreads("cpu:2", 1, 1); err == nil || !strings.Contains(err.Error(), "group") {
		t.Errorf("Open(cpu:2) = %v, want an error saying it is a group", err)
	}
}

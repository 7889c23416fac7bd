package emu

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aimtheory/aim/kernels"
)

// twins pairs each CUDA source kernels/X.cu with its CPU reference, as llm.c keeps each kernel
// beside its CPU version: the Go files (paths from the repository root) that compute the same
// values, and the tests of this package that run the kernels on the emulator against them.
// The channel math and the deep channel's sampler are in package channel under the kernel's
// name; the other kernels' twins are the CPU backend's operations and the device's normal
// stream.
var twins = map[string]struct {
	files []string
	tests []string
}{
	"channel": {
		[]string{"channel/channel.go", "channel/bvn.go", "channel/hardmaxt.go", "channel/polytope.go", "cpu/channel.go"},
		[]string{"TestChannelOutput", "TestChannelGOut", "TestHardmaxTGOut"},
	},
	"deep":      {[]string{"channel/deep.go", "cpu/deep.go"}, []string{"TestDeepSample", "TestDeepSampleBadL"}},
	"gauss":     {[]string{"device/normal.go", "device/philox.go"}, []string{"TestGauss"}},
	"precision": {[]string{"device/precision.go", "cpu/precision.go"}, []string{"TestPrecision"}},
	"tokens":    {[]string{"cpu/tokens.go"}, []string{"TestTokens"}},
	"train":     {[]string{"cpu/train.go"}, []string{"TestTrain"}},
	"vector":    {[]string{"cpu/vector.go", "cpu/linalg.go"}, []string{"TestElementwise", "TestReductions"}},
}

// TestTwins: every kernels/X.cu has a twin in the table above (a .cu without one fails), every
// twin is of a .cu that exists and of the module of some kernel of the launch contract, its Go
// files exist, and its emulator tests are tests of this package.
func TestTwins(t *testing.T) {
	root := filepath.Join("..", "..")
	cus, err := filepath.Glob(filepath.Join("..", "*.cu"))
	if err != nil || len(cus) == 0 {
		t.Fatalf("no kernels/*.cu: %v", err)
	}
	var modules []string
	for _, cu := range cus {
		m := strings.TrimSuffix(filepath.Base(cu), ".cu")
		modules = append(modules, m)
		if _, ok := twins[m]; !ok {
			t.Errorf("kernels/%s.cu has no Go twin: add its CPU reference and emulator test to twins", m)
		}
	}
	var launched []string
	for _, k := range kernels.Kernels() {
		if m, ok := kernels.KernelModule(k); ok && !slices.Contains(launched, m) {
			launched = append(launched, m)
		}
	}
	tests := map[string]bool{}
	fset := token.NewFileSet()
	pkgs, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pkgs {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				tests[fn.Name.Name] = true
			}
		}
	}
	for m, tw := range twins {
		if !slices.Contains(modules, m) {
			t.Errorf("twins lists %s, but there is no kernels/%s.cu", m, m)
		}
		if !slices.Contains(launched, m) {
			t.Errorf("twins lists %s, which defines no kernel of the launch contract", m)
		}
		for _, f := range tw.files {
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				t.Errorf("kernels/%s.cu: twin %s: %v", m, f, err)
			}
		}
		if len(tw.tests) == 0 {
			t.Errorf("kernels/%s.cu: no emulator test", m)
		}
		for _, name := range tw.tests {
			if !tests[name] {
				t.Errorf("kernels/%s.cu: emulator test %s does not exist", m, name)
			}
		}
	}
}

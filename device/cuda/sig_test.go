package cuda

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aimtheory/aim/kernels"
)

// TestKernelSignatures checks, without a GPU, that every kernel the backend launches is in the
// embedded PTX module that kernels.KernelModule names, with the parameter classes that launch
// passes (pointer/long long 64-bit, int 32-bit, double).
func TestKernelSignatures(t *testing.T) {
	ptx := kernels.PTX()
	if len(ptx) == 0 {
		t.Fatal("kernels.PTX() is empty")
	}
	entries := map[string]map[string][]string{}
	for m, src := range ptx {
		if len(src) == 0 {
			t.Errorf("module %s: empty PTX", m)
		}
		entries[m] = ptxEntries(string(src))
	}
	mine := append([]string(nil), kernelNames...)
	sort.Strings(mine)
	if !reflect.DeepEqual(mine, kernels.Kernels()) {
		t.Errorf("the backend launches %v, the contract has %v", mine, kernels.Kernels())
	}
	if len(kernelSigs) != len(kernelNames) {
		t.Errorf("%d signatures for %d kernels", len(kernelSigs), len(kernelNames))
	}
	for _, k := range kernelNames {
		want, ok := kernelSigs[k]
		if !ok {
			t.Errorf("kernel %s: no signature", k)
			continue
		}
		m, ok := kernels.KernelModule(k)
		if !ok {
			t.Errorf("kernel %s: kernels.KernelModule does not know it", k)
			continue
		}
		got, ok := entries[m][k]
		if !ok {
			t.Errorf("kernel %s: no .entry in module %s", k, m)
			continue
		}
		if np, _ := kernels.KernelParams(k); np != len(want) {
			t.Errorf("kernel %s: the contract says %d parameters, the backend passes %d", k, np, len(want))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("kernel %s: PTX parameters %s, the backend passes %s", k, sigString(got), sigString(want))
		}
	}
}

func TestCheckArgs(t *testing.T) {
	if err := checkArgs("scal", []any{uint64(1), int64(2), 0.5}); err != nil {
		t.Errorf("valid scal arguments: %v", err)
	}
	for _, c := range []struct {
		name string
		args []any
		want string
	}{
		{"scal", []any{uint64(1), int64(2)}, "takes 3 arguments, launched with 2"},
		{"scal", []any{uint64(1), int32(2), 0.5}, "argument 1 is 32"},
		{"add_diag", []any{uint64(1), int64(2), 3, 0.5}, "argument 2 is int"},
		{"nope", nil, "no signature"},
	} {
		if err := checkArgs(c.name, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("checkArgs(%s, %v) = %v, want %q", c.name, c.args, err, c.want)
		}
	}
	got := ptxEntries(".visible .entry f(\n\t.param .u64 f_param_0,\n\t.param .u32 f_param_1,\n\t.param .f64 f_param_2\n)\n{\n}\n.entry g()\n{}")
	if want := map[string][]string{"f": {"64", "32", "f64"}, "g": nil}; !reflect.DeepEqual(got, want) {
		t.Errorf("ptxEntries = %v, want %v", got, want)
	}
}

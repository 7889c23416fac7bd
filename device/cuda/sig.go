package cuda

import (
	"fmt"
	"regexp"
	"strings"
)

// kernelSigs gives the parameter classes of every kernel of the launch contract
// (kernels/launch.go), as PTX declares them: "64" a pointer, long long or unsigned long long
// (Go uint64 or int64), "32" an int (Go int32), "f64" a double (Go float64). launch checks its
// arguments against it, and a test checks it against the embedded PTX.
var kernelSigs = map[string][]string{
	"token_dots":        {"64", "64", "64", "64", "32", "32"},
	"token_mix":         {"64", "64", "64", "64", "32", "32"},
	"scal":              {"64", "64", "f64"},
	"axpby":             {"64", "f64", "64", "f64", "64"},
	"add_diag":          {"64", "64", "32", "f64"},
	"mul_pattern":       {"64", "64", "64", "32"},
	"scale_columns":     {"64", "64", "64", "32"},
	"dot_partial":       {"64", "64", "64", "64"},
	"sqdist_partial":    {"64", "64", "64", "64"},
	"sumdiag_partial":   {"64", "64", "64", "32"},
	"softmax_output":    {"64", "64", "64", "32", "f64"},
	"hardmax_output":    {"64", "64", "64", "32"},
	"softmax_gout":      {"64", "64", "64", "64", "64", "32", "f64", "f64"},
	"hardmax_gout":      {"64", "64", "64", "64", "64", "f64", "32"},
	"hardmaxt_gout":     {"64", "64", "64", "64", "64", "32", "f64", "32", "32", "f64"},
	"gaussian_fill":     {"64", "64", "64", "64", "f64"},
	"softmax_loss_grad": {"64", "64", "64", "64", "64", "32", "f64", "f64"},
	"adam_step":         {"64", "64", "64", "64", "64", "f64", "f64", "f64", "f64", "f64", "f64"},
	"deep_sample":       {"64", "64", "64", "32", "32", "f64", "f64", "64", "64", "64"},
	"deep_sample_warp":  {"64", "64", "64", "32", "32", "f64", "f64", "64", "64", "64"},
	"to_f32":            {"64", "64", "64", "32"},
	"split_bf16":        {"64", "64", "64", "64"},
	"from_f32":          {"64", "64", "64", "f64", "f64"},
}

// argClass returns the class of a launch argument.
func argClass(a any) string {
	switch a.(type) {
	case uint64, int64:
		return "64"
	case int32:
		return "32"
	case float64:
		return "f64"
	}
	return fmt.Sprintf("%T", a)
}

// checkArgs compares launch arguments with the kernel's signature.
func checkArgs(name string, args []any) error {
	sig, ok := kernelSigs[name]
	if !ok {
		return fmt.Errorf("kernel %s has no signature", name)
	}
	if len(args) != len(sig) {
		return fmt.Errorf("kernel %s takes %d arguments, launched with %d", name, len(sig), len(args))
	}
	for i, a := range args {
		if c := argClass(a); c != sig[i] {
			return fmt.Errorf("kernel %s: argument %d is %s (%T), the kernel takes %s", name, i, c, a, sig[i])
		}
	}
	return nil
}

var (
	ptxEntry = regexp.MustCompile(`\.entry\s+([A-Za-z_][A-Za-z0-9_$]*)\s*\(([^)]*)\)`)
	ptxParam = regexp.MustCompile(`\.param\s+\.([a-z]+)([0-9]+)`)
)

// ptxEntries returns the parameter classes of every .entry of a PTX text.
func ptxEntries(ptx string) map[string][]string {
	out := map[string][]string{}
	for _, m := range ptxEntry.FindAllStringSubmatch(ptx, -1) {
		var cls []string
		for _, p := range ptxParam.FindAllStringSubmatch(m[2], -1) {
			c := p[2]
			if p[1] == "f" {
				c = "f" + c
			}
			cls = append(cls, c)
		}
		out[m[1]] = cls
	}
	return out
}

// sigString formats a signature for messages.
func sigString(s []string) string { return "(" + strings.Join(s, ", ") + ")" }

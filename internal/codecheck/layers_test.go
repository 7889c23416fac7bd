package codecheck

import (
	"strings"
	"testing"
)

// TestLayers holds the module to Table: every import of a non-test file goes to its own unit or
// a lower layer, and none reaches back to the package of a folder above the importer.
func TestLayers(t *testing.T) {
	root, module, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	imports, err := ReadImports(root, module)
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 50 {
		t.Fatalf("%d imports of the module's packages under %s; the walk missed the source", len(imports), root)
	}
	for _, bad := range Check(imports) {
		t.Error(bad)
	}
}

// TestCheck shows each rule catching its violation, and the imports the table allows passing.
func TestCheck(t *testing.T) {
	im := func(from, to string) Import { return Import{File: from + "/x.go", Line: 3, From: from, To: to} }
	allowed := []Import{
		im("cpu", "device"), im("cpu", "cpu/nativeblas"), im("device/cuda", "device"), im("device", "kernels"),
		im("device", "channel"), im("channel", "internal/par"), im("backend", "cpu"), im("backend", "device/cuda"),
		im("engine/smi/amp", "engine/smi"), im("engine/smi", "device"), im("cmd/aim/internal/job", "engine/smi/amp"),
		im("cmd/aim/internal/job", "backend"), im("cmd/aim", "cmd/aim/internal/job"), im("bench", "engine/aim"),
		im("cmd/aim/internal/job/aimjob", "cmd/aim/internal/job"), im("cmd/aim/internal/job/smijob", "cmd/aim/internal/job"),
		im("cmd/aim/internal/job/benchjob", "cmd/aim/internal/job/aimjob"), im("cmd/aim", "cmd/aim/internal/job/smijob"),
	}
	if bad := Check(allowed); len(bad) > 0 {
		t.Errorf("allowed imports reported:\n%s", strings.Join(bad, "\n"))
	}
	for _, c := range []struct {
		imports []Import
		want    string
	}{
		{[]Import{im("device", "cpu")}, "device/x.go:3: device (layer device) imports cpu of the higher layer on device"},
		{[]Import{im("channel", "device")}, "imports device of the higher layer device"},
		{[]Import{im("engine/aim", "backend")}, "imports backend of the higher layer backend"},
		{[]Import{im("engine/aim", "cpu")}, "engine/aim (engine/...) imports cpu (cpu/...), another unit of the same layer on device"},
		{[]Import{im("device/cuda", "engine/aim")}, "another unit of the same layer on device"},
		{[]Import{im("cpu", "device/cuda")}, "cpu (cpu/...) imports device/cuda (device/cuda/...), another unit of the same layer on device"},
		{[]Import{im("tools", "device")}, "tools/x.go: package tools is in no layer"},
		{[]Import{im("cmd/aim/internal/job", "cmd/aim/internal/job/aimjob")}, "imports cmd/aim/internal/job/aimjob of the higher layer model jobs"},
		{[]Import{im("cmd/aim/internal/job/smijob", "cmd/aim/internal/job/aimjob")}, "another unit of the same layer model jobs"},
		{[]Import{im("cmd/aim/internal/job/aimjob", "cmd/aim/internal/job/benchjob")}, "of the higher layer bench job"},
		{[]Import{im("cpu", "tools")}, "cpu/x.go:3: imports tools, which is in no layer"},
		{[]Import{im("device/cuda/x", "cpu"), im("cpu", "device")},
			"device/cuda/x/x.go:3: device/cuda/x imports cpu, which imports device, the package of a folder above it (cpu -> device)"},
		{[]Import{im("engine/smi/x", "engine/stream"), im("engine/stream", "engine/fixedpoint"), im("engine/fixedpoint", "engine/smi")},
			"engine/smi/x imports engine/stream, which imports engine/smi, the package of a folder above it (engine/stream -> engine/fixedpoint -> engine/smi)"},
	} {
		bad := Check(append(c.imports, allowed...))
		if !strings.Contains(strings.Join(bad, "\n"), c.want) {
			t.Errorf("%v: got %q, want a report containing %q", c.imports, bad, c.want)
		}
	}
}

// TestLookup places packages by their closest unit.
func TestLookup(t *testing.T) {
	for _, c := range []struct {
		rel, layer, unit string
	}{
		{"cmd/aim/internal/job", "jobs", "cmd/aim/internal/..."},
		{"cmd/aim/internal/job/aimjob", "model jobs", "cmd/aim/internal/job/aimjob/..."},
		{"cmd/aim/internal/job/smijob", "model jobs", "cmd/aim/internal/job/smijob/..."},
		{"cmd/aim/internal/job/benchjob", "bench job", "cmd/aim/internal/job/benchjob/..."},
		{"cmd/aim", "commands", "cmd/..."},
		{"device", "device", "device"},
		{"device/cuda", "on device", "device/cuda/..."},
		{"cpu/nativeblas", "on device", "cpu/..."},
		{"engine/smi/se", "on device", "engine/..."},
		{"channel", "channel", "channel/..."},
		{"internal/codecheck", "internal", "internal/..."},
	} {
		l, u, ok := Lookup(c.rel)
		if !ok || Table[l].Name != c.layer || u != c.unit {
			t.Errorf("Lookup(%s) = %d (%s), %s, %v; want %s, %s", c.rel, l, Table[l].Name, u, ok, c.layer, c.unit)
		}
	}
	for _, rel := range []string{"device/x", "devices", "tools", "cpux"} {
		if l, u, ok := Lookup(rel); ok {
			t.Errorf("Lookup(%s) = %d, %s; want no unit", rel, l, u)
		}
	}
}

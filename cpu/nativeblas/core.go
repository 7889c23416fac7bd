package nativeblas

import (
	"bufio"
	"os"
	"slices"
	"strings"
)

// CPU describes the features of the processor that decide which OpenBLAS kernels fit it.
type CPU struct {
	Vendor string          // vendor_id of /proc/cpuinfo: "GenuineIntel", "AuthenticAMD", ...
	Model  string          // model name, for messages
	Flags  map[string]bool // the flags line of /proc/cpuinfo
}

// ReadCPU returns the features of this machine's first processor from /proc/cpuinfo; ok is
// false where that file cannot be read (not Linux), and the CPU is then empty.
func ReadCPU() (c CPU, ok bool) {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return CPU{}, false
	}
	return ParseCPUInfo(string(raw)), true
}

// ParseCPUInfo reads the vendor, model name and flags of the first processor of a
// /proc/cpuinfo text.
func ParseCPUInfo(text string) CPU {
	c := CPU{Flags: map[string]bool{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" && c.Vendor != "" {
			break // end of the first processor's block
		}
		k, v, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "vendor_id":
			c.Vendor = v
		case "model name":
			c.Model = v
		case "flags":
			for _, f := range strings.Fields(v) {
				c.Flags[f] = true
			}
		}
	}
	return c
}

// Kernel tiers of OpenBLAS's x86-64 targets: what the dgemm kernel of a core type uses.
const (
	tierOld    = 0 // SSE-era kernels: Prescott, Nehalem, Core2, Opteron, Sandybridge, ...
	tierAVX2   = 1 // AVX2 + FMA kernels: Haswell, Zen
	tierAVX512 = 2 // AVX-512 kernels: SkylakeX, Cooperlake, SapphireRapids
)

// coreTier returns the kernel tier of an OpenBLAS core name (openblas_get_corename, which
// OpenBLAS returns in lower or mixed case depending on the version).
func coreTier(core string) int {
	switch strings.ToLower(core) {
	case "skylakex", "cooperlake", "sapphirerapids":
		return tierAVX512
	case "haswell", "zen":
		return tierAVX2
	}
	return tierOld
}

// tier returns the best kernel tier the CPU can run.
func (c CPU) tier() int {
	switch {
	case c.has("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"):
		return tierAVX512
	case c.has("avx2", "fma"):
		return tierAVX2
	}
	return tierOld
}

func (c CPU) has(flags ...string) bool {
	return !slices.ContainsFunc(flags, func(f string) bool { return !c.Flags[f] })
}

// BestCore returns the OpenBLAS core type (a value of OPENBLAS_CORETYPE) whose kernels fit the
// CPU best, and the CPU flags that justify it: SkylakeX where AVX-512 (F, CD, BW, DQ, VL) is
// present, Zen for AMD and Hygon processors with AVX2 and FMA, Haswell for others with AVX2 and
// FMA. It returns "" for older processors, where OpenBLAS's own detection is left alone.
func (c CPU) BestCore() (core, why string) {
	switch c.tier() {
	case tierAVX512:
		return "SkylakeX", "avx512f avx512cd avx512bw avx512dq avx512vl"
	case tierAVX2:
		if c.Vendor == "AuthenticAMD" || c.Vendor == "HygonGenuine" {
			return "Zen", "avx2 fma, " + c.Vendor
		}
		return "Haswell", "avx2 fma"
	}
	return "", ""
}

// Underuses reports whether the OpenBLAS core type core runs older kernels than the CPU
// supports: the misdetection that makes OpenBLAS several times slower (Prescott kernels on an
// AVX-512 machine, for example).
func (c CPU) Underuses(core string) bool {
	return core != "" && coreTier(core) < c.tier()
}

package main

import "strings"

// withFlags returns base with extra after it, less the flags of base (with their values) that
// extra gives again: a flag may be given once.
func withFlags(base []string, extra ...string) []string {
	set := map[string]bool{}
	for _, a := range extra {
		if name, ok := flagName(a); ok {
			set[name] = true
		}
	}
	var out []string
	for k := 0; k < len(base); k++ {
		name, ok := flagName(base[k])
		if !ok || !set[name] {
			out = append(out, base[k])
			continue
		}
		if !strings.Contains(base[k], "=") && name != "quiet" && k+1 < len(base) {
			k++
		}
	}
	return append(out, extra...)
}

// flagName returns the name of a flag argument.
func flagName(a string) (string, bool) {
	if len(a) < 2 || a[0] != '-' {
		return "", false
	}
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name, true
}

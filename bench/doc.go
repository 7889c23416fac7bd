// Package bench holds the benchmarks of whole algorithms on a device: one GAMP-RIE iteration
// at growing D, its GFLOP/s, and the exponent of its cost in D (expected near 4, since one
// iteration costs O(alpha T D^4)). Run them with `make bench` or
// `go test -run '^$' -bench . ./bench/`.
package bench

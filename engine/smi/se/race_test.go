//go:build race

package se

// raceEnabled is true under the race detector (go test -race), where the Monte Carlo accuracy
// checks of the free entropy run ten times slower and test no concurrency that the workers
// tests (TestSMIQErrWorkers, TestSMIGenErrorWorkers) do not: they skip there, and run in the
// plain `go test` of `make test`.
const raceEnabled = true

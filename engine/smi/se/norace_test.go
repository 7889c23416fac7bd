//go:build !race

package se

// raceEnabled: see race_test.go.
const raceEnabled = false

//go:build !race

package rollback_test

const raceEnabled = false

//go:build !race

package guest

const raceEnabled = false

//go:build !unix

package catalog

// readSmall is readCapped's data and answer (into is for the unix
// version's reuse).
func readSmall(path string, _ []byte) ([]byte, string) {
	data, _, reason := readCapped(path)
	return data, reason
}

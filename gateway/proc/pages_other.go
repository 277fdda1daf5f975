//go:build !linux

package proc

// ReleaseStartupPages does nothing outside Linux (see pages_linux.go).
func ReleaseStartupPages() (int64, error) { return 0, nil }

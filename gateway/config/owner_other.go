//go:build !unix

package config

import "os"

// foreignOwner: ownership is checked on unix only (Windows profiles are
// not shared through a writable parent directory the same way).
func foreignOwner(string) (int, bool) { return 0, false }

func foreignInfo(os.FileInfo) (int, bool) { return 0, false }

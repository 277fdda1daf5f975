//go:build !linux

package proc

func dumpableState() string { return "ok" }

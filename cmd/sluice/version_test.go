package main

import "testing"

func TestVersionRefusesArgumentsAndFlags(t *testing.T) {
	want(t, sluice(t, "", "version"), exitOK, "sluice ")
	r := sluice(t, "", "version", "extra")
	want(t, r, exitUsage, `unexpected argument "extra"; version takes no arguments`)
	if r.stdout != "" {
		t.Fatalf("a refused version printed on stdout:\n%s", r)
	}
	want(t, sluice(t, "", "version", "--bogus"), exitUsage, "flag provided but not defined: --bogus", "sluice help version")
	want(t, sluice(t, "", "--version"), exitOK, "sluice ")
}

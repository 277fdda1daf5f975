package main

import (
	"errors"
	"testing"
)

// TestRangeFlagTakesGoNumberForms: a range-checked number flag reads the
// forms the flag package's Int flags read (base prefixes, underscores),
// so a script written before the range check keeps working; the range
// still holds for each form.
func TestRangeFlagTakesGoNumberForms(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		err  error
	}{
		{"16", 16, nil},
		{"0x10", 16, nil},
		{"0o20", 16, nil},
		{"020", 16, nil},
		{"0b10000", 16, nil},
		{"1_000", 1000, nil},
		{"+7", 7, nil},
		{"0x1_0000", 0, errOutOfRange},
		{"-0x1", 0, errOutOfRange},
		{"0x", 0, errNotWhole},
		{"1e3", 0, errNotWhole},
		{"ten", 0, errNotWhole},
	} {
		var n int
		r := &rangeValue[int]{p: &n, min: 0, max: 4096}
		err := r.Set(c.in)
		if !errors.Is(err, c.err) || (c.err == nil && n != c.want) {
			t.Errorf("Set(%q) = %d, %v; want %d, %v", c.in, n, err, c.want, c.err)
		}
	}
}

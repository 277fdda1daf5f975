package wasm

import "time"

// renameRetryFor bounds how long a stored result's rename waits for
// another handle on the file to close (Windows only; see renameResult).
const renameRetryFor = 2 * time.Second

// renameRetrying calls rename(from, to) until it succeeds, fails with an
// error busy does not accept, or budget has passed on now's clock; it
// sleeps between attempts, 1 ms at first, doubling up to 50 ms. The
// result is the last attempt's error.
func renameRetrying(rename func(from, to string) error, busy func(error) bool, from, to string,
	budget time.Duration, now func() time.Time, sleep func(time.Duration)) error {
	deadline := now().Add(budget)
	wait := time.Millisecond
	for {
		err := rename(from, to)
		if err == nil || !busy(err) || now().After(deadline) {
			return err
		}
		sleep(wait)
		if wait < 50*time.Millisecond {
			wait = min(wait*2, 50*time.Millisecond)
		}
	}
}

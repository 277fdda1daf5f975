package gateway

import (
	"log/slog"

	"sluice/gateway/internal/threads"
)

// AdaptThreads runs the process's Go code on one thread and raises the
// count to the runtime's default while the process is busy, lowering it
// after a sustained quiet spell (see gateway/internal/threads): 'sluice
// serve --procs auto'. stop ends the monitoring and returns the number of
// changes made; ok is false, with nothing changed, where the platform
// gives no process CPU time.
func AdaptThreads(log *slog.Logger) (stop func() int, ok bool) {
	m, err := threads.Start(threads.Options{Logger: log})
	if err != nil {
		return nil, false
	}
	return func() int { m.Stop(); return m.Changes() }, true
}

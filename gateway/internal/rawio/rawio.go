// Package rawio reads and writes non-blocking descriptors through the Go
// runtime's poller with raw system calls: the stdio paths that carry
// every call (the agent's stdin and stdout, each upstream server's pipes).
// gateway/front and gateway/mcp use it.
//
// It imports only the standard library and must never import another
// package of the module.
//
// # Why raw system calls
//
// os.File reads and writes a polled descriptor with syscall.Read and
// syscall.Write, and each of those tells the runtime it is entering a
// system call that might block. When the process was idle just before
// (every Go thread parked, as a stdio gateway is between two calls), the
// runtime's monitor thread is asleep, and that announcement wakes it: a
// futex wake, a thread switch, and then tens of 20 µs naps of the monitor
// while it decides the process went quiet again. The process pays that
// per call, twice (the agent's request, the upstream's answer): on a
// 2-core machine it was about a sixth of sluice serve's CPU per stdio
// call. A read or write of a non-blocking descriptor never blocks, so
// there is nothing for the monitor to take back: File issues it as a raw
// system call and lets the poller wait when the descriptor is not ready,
// as os.File does (deadlines and Close included). That is done on Linux,
// where a raw read(2) and write(2) are plain system calls; elsewhere New
// declines and callers use os.File on the same poller.
package rawio

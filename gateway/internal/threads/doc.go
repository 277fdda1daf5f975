// Package threads adapts how many threads run the process's Go code at
// once (the runtime's GOMAXPROCS) to the load: one while the load is light,
// the runtime's default once the process is busy, and one again after a
// sustained quiet spell. 'sluice serve --http' uses it by default, either
// transport with --procs auto. It imports nothing of ours.
//
// The decision (Policy) is a pure function of samples, so it is tested
// with synthetic ones; the Monitor only takes the samples and applies
// what Policy decides.
//
// # Why one thread first
//
// One agent's call is handed between a few goroutines (a frame or HTTP
// reader, a worker, the upstream client's reader). With a second P idle,
// the runtime wakes a thread at each hand-off (a futex wake, a context
// switch, the woken thread spinning to find work), several microseconds a
// hand-off on a small machine; with one P the readied goroutine runs next
// on the same thread. The same binary used 1.20–1.33× the CPU per call with
// two Ps, and the latency serve adds over HTTP was 0.80× with one.
//
// # Why the runtime's default under load
//
// One P caps the process at one core: many agents, a CPU-heavy filter or
// code mode running calls at once queue behind it. So when the process is
// busy at one P — its CPU time (user plus system, from the kernel) is most
// of a core, or goroutines that became runnable wait for the P in a
// large share of the scheduler's samples while the process does real work
// — it raises GOMAXPROCS to the runtime's default
// (runtime.SetDefaultGOMAXPROCS, which also keeps following the CPU
// limit of a container).
//
// # Why changes are rare
//
// runtime.GOMAXPROCS stops the world. Policy raises after HotSamples busy
// samples in a row (300 ms), lowers only after ColdSamples light ones in
// a row (three seconds) and doubles that wait, up to a minute, each time a
// raise follows a lowering within FlapWindow; every change is counted and
// logged at debug level. "Light" at the high count is under ColdCPU (0.6)
// of one core, well under HotCPU (0.8) even with the 1.2–1.3× CPU per
// call two Ps cost: a limit as low as the single-call load (about a third
// of a core) kept one agent's calls on two Ps for good.
//
// # Why the mean queue and not a count of runnable goroutines
//
// /sched/goroutines/runnable is one instant; the latency histogram covers
// the whole interval. Its sum over the interval (scaled by the runtime's
// sampling of one run in eight) is the time goroutines spent runnable,
// and that over the wall time is the mean number waiting for a P: one or
// more means a second P would have had work the whole time. One agent's
// calls keep it well under one. The histogram also counts time the P's
// thread waited for a core the machine did not have, so on a busy machine
// the queue rises without a second P helping; HotQueueCPU keeps a process
// that gets little CPU from being raised for it.
//
// # Why the monitor sleeps while the process is idle
//
// A ticker that wakes an idle process costs little, but nothing is
// cheaper than no wake at all, and a per-call signal ("I am busy") would
// put a cost on every call to save one on none. After a second of idleness
// at one P the Monitor stops sampling and waits for the next garbage
// collection: every call allocates, so load soon brings a collection, and
// a collection is what wakes it (a cleanup on an object it leaves for the
// collector). An idle process allocates nothing, so nothing runs until the
// runtime's forced collection every two minutes, which costs a few
// samples. With garbage collection off (GOGC=off) it checks every second
// instead.
//
// # Why a quiet process hands back its free heap
//
// The collector keeps the pages a collection freed for the next
// allocations and returns them to the OS only slowly, so a server that has
// answered a burst and gone quiet keeps megabytes it does not use (about a
// quarter of 'sluice serve --http's idle footprint). When the process
// turns quiet — QuietSamples idle samples in a row at one P — and at
// least TrimBytes of the heap are free, the Monitor collects and returns
// every free page (debug.FreeOSMemory), once per quiet spell: a
// millisecond or two of CPU when nothing else runs, and the next calls
// fault the pages they need back in. Its own CPU is left out of the
// samples, so a trim never counts as activity. With GOGC=off it does not
// trim.
package threads

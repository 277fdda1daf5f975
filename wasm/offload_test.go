package wasm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOffloadStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	now := time.Now()
	s, err := NewOffloadStore(OffloadOptions{Dir: dir, TTL: time.Hour, QuotaBytes: 1000, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", fi.Mode().Perm())
	}
	data := bytes.Repeat([]byte("0123456789"), 30)
	h, err := s.Put(data)
	if err != nil || !validHandle(h) {
		t.Fatalf("Put: %q %v", h, err)
	}
	fi, _ = os.Stat(filepath.Join(dir, h+offloadSuffix))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", fi.Mode().Perm())
	}
	tests := []struct {
		name        string
		handle      string
		off, length int64
		want        string
		more        bool
		err         error
	}{
		{"first page", h, 0, 10, "0123456789", true, nil},
		{"middle", h, 295, 3, "567", true, nil},
		{"tail", h, 295, 100, "56789", false, nil},
		{"whole", h, 0, 0, string(data), false, nil},
		{"past end", h, 300, 1, "", false, ErrOffsetOutOfRange},
		{"negative", h, -1, 1, "", false, ErrOffsetOutOfRange},
		{"unknown", "r-" + "0123456789abcdef0123456789abcdef", 0, 1, "", false, ErrHandleUnknown},
		{"traversal", "../../etc/passwd", 0, 1, "", false, ErrHandleInvalid},
		{"uppercase", "r-" + "0123456789ABCDEF0123456789ABCDEF", 0, 1, "", false, ErrHandleInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := s.Get(tc.handle, tc.off, tc.length)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || string(c.Data) != tc.want || c.More != tc.more || c.Total != 300 || c.Offset != tc.off {
				t.Fatalf("got %+v %v", c, err)
			}
		})
	}
	// Quota: the oldest results are evicted to make room.
	now = now.Add(time.Minute)
	h2, err := s.Put(bytes.Repeat([]byte("b"), 600))
	if err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(dir, h2+offloadSuffix), now, now)
	now = now.Add(time.Minute)
	h3, err := s.Put(bytes.Repeat([]byte("c"), 300))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(h, 0, 1); !errors.Is(err, ErrHandleUnknown) {
		t.Fatalf("oldest not evicted: %v", err)
	}
	if _, err := s.Get(h3, 0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(make([]byte, 1001)); !errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("over quota: %v", err)
	}
	// TTL.
	now = now.Add(2 * time.Hour)
	if _, err := s.Get(h3, 0, 1); !errors.Is(err, ErrHandleExpired) {
		t.Fatalf("expired: %v", err)
	}
	if err := s.Sweep(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("sweep left %d files", len(ents))
	}
	// An open directory is refused.
	loose := filepath.Join(t.TempDir(), "loose")
	os.Mkdir(loose, 0o755)
	if _, err := NewOffloadStore(OffloadOptions{Dir: loose}); !errors.Is(err, ErrOffloadStoreInDir) {
		t.Fatalf("0755 dir: %v", err)
	}
}

// TestShapeWithOffloadStore: the shape filter stores the full result through
// the store, and the handle in the marker pages it back.
func TestShapeWithOffloadStore(t *testing.T) {
	s, err := NewOffloadStore(OffloadOptions{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHost(t, &Options{Offload: s.PutContext})
	f := mustLoad(t, h, Spec{Builtin: "shape"})
	in := proseResult(100 << 10)
	out, err := f.Run(context.Background(), in, Meta{})
	if err != nil || out.Status != StatusReplaced {
		t.Fatal(err, out.Status)
	}
	i := bytes.Index(out.Data, []byte("handle r-"))
	if i < 0 {
		t.Fatalf("no handle: %s", out.Data[len(out.Data)-300:])
	}
	handle := string(out.Data[i+7 : i+7+34])
	var got []byte
	for off := int64(0); ; {
		c, err := s.Get(handle, off, 32<<10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Data...)
		off += int64(len(c.Data))
		if !c.More {
			break
		}
	}
	if !bytes.Equal(got, in) {
		t.Fatal("paged result differs from the original")
	}
}

// TestOffloadStoreManyEntries: with thousands of results the in-memory
// usage stays equal to the directory's, the quota holds after every Put,
// the newest results survive eviction, and results another process stores
// or removes are accounted for after a rescan.
func TestOffloadStoreManyEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	now := time.Now()
	clock := func() time.Time { return now }
	const size, keep = 1000, 100
	s, err := NewOffloadStore(OffloadOptions{Dir: dir, TTL: time.Hour, QuotaBytes: keep * size, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	onDisk := func() (int64, int) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var used int64
		for _, e := range ents {
			fi, _ := e.Info()
			used += fi.Size()
		}
		return used, len(ents)
	}
	var handles []string
	for i := 0; i < 3000; i++ {
		h, err := s.Put(bytes.Repeat([]byte{byte(i)}, size))
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		handles = append(handles, h)
		if used, n := s.usage(); used > keep*size || n > keep {
			t.Fatalf("put %d: %d bytes in %d results, quota %d", i, used, n, keep*size)
		}
	}
	if used, n := s.usage(); used != keep*size || n != keep {
		t.Fatalf("usage %d bytes / %d results, want %d / %d", used, n, keep*size, keep)
	}
	if used, n := onDisk(); used != keep*size || n != keep {
		t.Fatalf("directory holds %d bytes / %d files, want %d / %d", used, n, keep*size, keep)
	}
	for _, h := range handles[len(handles)-keep:] {
		if c, err := s.Get(h, 0, 1); err != nil || len(c.Data) != 1 {
			t.Fatalf("recent result %s: %v", h, err)
		}
	}
	if _, err := s.Get(handles[len(handles)-keep-1], 0, 1); !errors.Is(err, ErrHandleUnknown) {
		t.Fatalf("oldest result not evicted: %v", err)
	}

	// Another process sharing the directory stores results; this store
	// sees them at its next rescan (here: the interval has passed) and
	// evicts to stay under the quota.
	other, err := NewOffloadStore(OffloadOptions{Dir: dir, TTL: time.Hour, QuotaBytes: 10 * keep * size, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := other.Put(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(offloadRescanEvery)
	if _, err := s.Put(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if used, n := onDisk(); used > keep*size || n > keep {
		t.Fatalf("after the rescan the directory holds %d bytes / %d files, quota %d", used, n, keep*size)
	}
	if used, _ := s.usage(); used != keep*size {
		t.Fatalf("usage %d, want %d", used, keep*size)
	}
	// Results removed behind the store's back are forgotten, not counted.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents[:keep/2] {
		os.Remove(filepath.Join(dir, e.Name()))
	}
	if err := s.Sweep(); err != nil {
		t.Fatal(err)
	}
	if used, n := s.usage(); used != keep/2*size || n != keep/2 {
		t.Fatalf("after Sweep: %d bytes / %d results, want %d / %d", used, n, keep/2*size, keep/2)
	}
	// Expiry from memory: everything is past its TTL.
	now = now.Add(2 * time.Hour)
	if _, err := s.Put([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if used, n := onDisk(); used != 1 || n != 1 {
		t.Fatalf("expired results left: %d bytes / %d files", used, n)
	}
}

// BenchmarkOffloadPut: Put into a store already holding 2000 results
// against Put into an empty one. x-empty = full / empty: Put does not read
// the directory, so it stays near 1.
func BenchmarkOffloadPut(b *testing.B) {
	data := make([]byte, 4096)
	mk := func(n int) *OffloadStore {
		s, err := NewOffloadStore(OffloadOptions{Dir: filepath.Join(b.TempDir(), "r"), QuotaBytes: 1 << 40})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if _, err := s.Put(data); err != nil {
				b.Fatal(err)
			}
		}
		return s
	}
	empty := mk(0)
	emptyNs := nsPerOp(func() {
		h, _ := empty.Put(data)
		os.Remove(empty.path(h))
	})
	full := mk(2000)
	b.ResetTimer()
	for b.Loop() {
		h, err := full.Put(data)
		if err != nil {
			b.Fatal(err)
		}
		os.Remove(full.path(h))
	}
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(emptyNs, "empty-ns/op")
	b.ReportMetric(per/emptyNs, "x-empty")
}

// TestOffloadStoreRefusesLinks: a symlink or a FIFO planted in the store
// under a valid handle's name is refused, not followed or blocked on.
func TestOffloadStoreRefusesLinks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	s, err := NewOffloadStore(OffloadOptions{Dir: dir, SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("outside the store"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := "r-" + "00000000000000000000000000000001"
	if err := os.Symlink(secret, s.path(link)); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Get(link, 0, 0); !errors.Is(err, ErrHandleNotRegular) {
		t.Fatalf("symlink: got %q, %v; want ErrHandleNotRegular", c.Data, err)
	}
	fifo := "r-" + "00000000000000000000000000000002"
	if err := mkfifo(s.path(fifo)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Get(fifo, 0, 0); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrHandleNotRegular) {
			t.Fatalf("fifo: %v, want ErrHandleNotRegular", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get blocked on a FIFO")
	}
}

// TestOffloadStoreSweepsInBackground: results past their TTL are removed
// by the periodic sweep, with no Put or Get to trigger it, and Close
// stops the sweep.
func TestOffloadStoreSweepsInBackground(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, err := NewOffloadStore(OffloadOptions{Dir: dir, TTL: time.Hour, SweepEvery: 5 * time.Millisecond, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put([]byte("old")); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files after Put", len(ents))
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ents, _ := os.ReadDir(dir)
		if len(ents) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired result was not swept")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Close()
	// After Close no sweep runs: a result that expires stays on disk
	// (until a Put, Get or Sweep).
	if _, err := s.Put([]byte("kept")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("a closed store's sweep removed results: %d files left", len(ents))
	}
}

// endsAfter is a context whose Err is nil for its first n calls and
// Canceled after: a deadline that comes part way through a write, at a
// chosen point, without timing.
type endsAfter struct {
	context.Context
	mu sync.Mutex
	n  int
}

func (c *endsAfter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// TestOffloadPutAllOrNothing: a put that needs older results evicted and
// is given up part way through its write leaves the store as it was
// (the older results still readable, no new result, no temporary file);
// the same put, not given up, evicts them and is stored. Before, the
// older results were evicted before the write began and lost.
func TestOffloadPutAllOrNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	s, err := NewOffloadStore(OffloadOptions{Dir: dir, QuotaBytes: 4 << 20, SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := bytes.Repeat([]byte("old result "), 150000) // 1.6 MB each, two fill most of the quota
	var handles []string
	for range 2 {
		h, err := s.Put(old)
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, h)
	}
	big := bytes.Repeat([]byte("n"), 3*offloadWriteChunk+5) // needs both evicted
	// Given up after two of its four chunks.
	_, err = s.PutContext(&endsAfter{Context: context.Background(), n: 3}, big)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("put given up: %v; want context.Canceled", err)
	}
	for _, h := range handles {
		c, err := s.Get(h, 0, 0)
		if err != nil || c.Total != int64(len(old)) {
			t.Errorf("older result %s after a put given up: %v (total %d)", h, err, c.Total)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		for _, e := range ents {
			t.Logf("in the store: %s", e.Name())
		}
		t.Errorf("%d files in the store after a put given up; want the 2 older results", len(ents))
	}
	if used, n := s.usage(); used != 2*int64(len(old)) || n != 2 {
		t.Errorf("usage %d bytes in %d results; want %d in 2", used, n, 2*len(old))
	}
	// Not given up: stored, the older results evicted for it.
	h, err := s.PutContext(context.Background(), big)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Get(h, 0, 0); err != nil || c.Total != int64(len(big)) {
		t.Fatalf("new result: %v (total %d)", err, c.Total)
	}
	for _, old := range handles {
		if _, err := s.Get(old, 0, 0); !errors.Is(err, ErrHandleUnknown) {
			t.Errorf("older result %s: %v; want it evicted", old, err)
		}
	}
}

// pausesAt blocks in its nth Err call (counting from 1) until resume is
// closed, telling paused when it blocks: a put paused mid-write.
type pausesAt struct {
	context.Context
	mu             sync.Mutex
	n              int
	paused, resume chan struct{}
}

func (c *pausesAt) Err() error {
	c.mu.Lock()
	c.n--
	hit := c.n == 0
	c.mu.Unlock()
	if hit {
		close(c.paused)
		<-c.resume
	}
	return nil
}

// waitsOnDone tells waiting the first time Done is asked for: PutContext
// asks only when it has to wait for room.
type waitsOnDone struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *waitsOnDone) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

// TestOffloadConcurrentPutsShareTheQuota: results being written count
// against a quota of their own, so concurrent puts cannot put many
// quotas of temporary files on disk at once (each put used to write its
// whole temporary file before anything was counted). A put that does
// not fit beside those in flight waits for them, and then succeeds.
func TestOffloadConcurrentPutsShareTheQuota(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	const quota = 4 << 20
	s, err := NewOffloadStore(OffloadOptions{Dir: dir, QuotaBytes: quota, SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := bytes.Repeat([]byte("r"), 3<<20) // two do not fit the quota at once
	first := &pausesAt{Context: context.Background(), n: 3, paused: make(chan struct{}), resume: make(chan struct{})}
	firstDone := make(chan error, 1)
	go func() {
		_, err := s.PutContext(first, data)
		firstDone <- err
	}()
	<-first.paused // one chunk written, the rest waits
	second := &waitsOnDone{Context: context.Background(), waiting: make(chan struct{})}
	secondDone := make(chan error, 1)
	go func() {
		_, err := s.PutContext(second, data)
		secondDone <- err
	}()
	select {
	case err := <-secondDone:
		temps := 0
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				temps++
			}
		}
		t.Fatalf("second put ended (%v) while the first was still writing: %d bytes written at once, quota %d (%d temporary files left)",
			err, 2*len(data), quota, temps)
	case <-second.waiting:
	}
	close(first.resume)
	if err := <-firstDone; err != nil {
		t.Fatalf("first put: %v", err)
	}
	if err := <-secondDone; err != nil {
		t.Fatalf("second put, after the first: %v", err)
	}
	if used, n := s.usage(); used != int64(len(data)) || n != 1 {
		t.Errorf("usage %d bytes in %d results; want the second's %d in 1", used, n, len(data))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files in the store; want 1", len(ents))
	}
}

// TestOffloadPutWaitingGivesUp: a put waiting for room beside others in
// flight ends with its context and takes nothing.
func TestOffloadPutWaitingGivesUp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	s, err := NewOffloadStore(OffloadOptions{Dir: dir, QuotaBytes: 4 << 20, SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := bytes.Repeat([]byte("r"), 3<<20)
	first := &pausesAt{Context: context.Background(), n: 3, paused: make(chan struct{}), resume: make(chan struct{})}
	firstDone := make(chan error, 1)
	go func() {
		_, err := s.PutContext(first, data)
		firstDone <- err
	}()
	<-first.paused
	ctx, cancel := context.WithCancel(context.Background())
	second := &waitsOnDone{Context: ctx, waiting: make(chan struct{})}
	secondDone := make(chan error, 1)
	go func() {
		_, err := s.PutContext(second, data)
		secondDone <- err
	}()
	select {
	case err := <-secondDone:
		t.Fatalf("second put ended (%v) while the first was still writing; want it to wait", err)
	case <-second.waiting:
	}
	cancel()
	if err := <-secondDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting put after its context ended: %v; want context.Canceled", err)
	}
	close(first.resume)
	if err := <-firstDone; err != nil {
		t.Fatalf("first put: %v", err)
	}
	s.mu.Lock()
	inflight := s.inflight
	s.mu.Unlock()
	if inflight != 0 {
		t.Errorf("%d bytes still counted in flight after both puts ended", inflight)
	}
}

package wasm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Offload store defaults.
const (
	DefaultOffloadTTL   = 24 * time.Hour
	DefaultOffloadQuota = 256 << 20
	MaxOffloadPage      = 1 << 20
	offloadSuffix       = ".result"
)

// Offload store errors.
var (
	ErrHandleUnknown     = errors.New("wasm: no stored result for this handle (never stored, or expired and removed)")
	ErrHandleExpired     = errors.New("wasm: the stored result for this handle has expired")
	ErrHandleInvalid     = errors.New("wasm: not a result handle (want r- followed by 32 hex digits)")
	ErrQuotaExceeded     = errors.New("wasm: result larger than the offload store's quota")
	ErrOffsetOutOfRange  = errors.New("wasm: offset beyond the end of the stored result")
	ErrOffloadStoreInDir = errors.New("wasm: offload store directory is unsafe")
	ErrHandleNotRegular  = errors.New("wasm: the stored result is not a regular file (a symlink or device in the store is refused)")
)

// OffloadOptions configures an OffloadStore; zero values mean the defaults.
type OffloadOptions struct {
	Dir        string        // required; created 0700 if missing
	TTL        time.Duration // default 24h
	QuotaBytes int64         // total bytes kept; default 256 MiB; oldest results are evicted to make room
	// SweepEvery is how often a background sweep removes expired results
	// while the store is open (so a long-running serve that stores nothing
	// new still lets old results go). Default: TTL/4, between one minute
	// and one hour; negative = no background sweep. Close stops it.
	SweepEvery time.Duration
	Now        func() time.Time
}

// OffloadStore keeps offloaded results as files named by opaque handles:
// 0700 directory, 0600 files, written atomically (temp file + rename),
// expired after TTL, total size held under a quota by evicting the oldest.
// Its Put method fits Options.Offload. Safe for concurrent use; several
// processes may share a directory (the quota is then approximate).
//
// The store keeps its usage (every live result's size and time, oldest
// first) in memory, so Put costs O(1) amortised whatever the number of
// results; the directory is read once at the first Put, again every
// offloadRescanPuts puts or offloadRescanEvery, at every Sweep, and before
// a Put gives up for lack of room, so results other processes store or
// remove are accounted for soon.
type OffloadStore struct {
	dir   string
	ttl   time.Duration
	quota int64
	now   func() time.Time
	mu    sync.Mutex

	// Usage, guarded by mu; valid once scanned.
	scanned  bool
	byName   map[string]*storedEntry
	queue    []*storedEntry // oldest first; removed entries are marked gone
	gone     int            // entries of queue marked gone
	used     int64
	puts     int       // since the last scan
	lastScan time.Time // s.now() at the last scan

	sweepTimer *time.Timer // background sweep; nil once closed or when off
	closed     bool

	// writing holds the temporary files of puts still being written
	// (guarded by mu): a scan leaves them alone, whatever their age by
	// the store's clock.
	writing map[string]bool

	// inflight is the bytes of the puts being written (guarded by mu),
	// held at most quota: a put waits on released (closed and replaced
	// at each release) until its bytes fit beside the others. Stored
	// results stay under the quota and results being written under
	// another quota, so the directory never holds more than twice it.
	inflight int64
	released chan struct{}
}

// Rescan triggers (see OffloadStore).
const (
	offloadRescanPuts  = 256
	offloadRescanEvery = time.Minute
)

// OffloadChunk is a page of a stored result.
type OffloadChunk struct {
	Data   []byte
	Offset int64 // of Data in the stored result
	Total  int64 // size of the stored result
	More   bool  // bytes remain after Data
}

// NewOffloadStore opens (creating if needed) the store directory. An existing
// directory must not be a symlink and must not be accessible to group or
// others.
func NewOffloadStore(o OffloadOptions) (*OffloadStore, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("%w: no directory given", ErrOffloadStoreInDir)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("wasm: creating offload store %s: %w", o.Dir, err)
	}
	fi, err := os.Lstat(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("wasm: offload store %s: %w", o.Dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory (symlinks are refused)", ErrOffloadStoreInDir, o.Dir)
	}
	if looseMode(fi) {
		return nil, fmt.Errorf("%w: %s has mode %v; it must be 0700 (chmod 700 it)", ErrOffloadStoreInDir, o.Dir, fi.Mode().Perm())
	}
	s := &OffloadStore{dir: o.Dir, ttl: o.TTL, quota: o.QuotaBytes, now: o.Now}
	if s.ttl <= 0 {
		s.ttl = DefaultOffloadTTL
	}
	if s.quota <= 0 {
		s.quota = DefaultOffloadQuota
	}
	if s.now == nil {
		s.now = time.Now
	}
	every := o.SweepEvery
	if every == 0 {
		every = min(max(s.ttl/4, time.Minute), time.Hour)
	}
	if every > 0 {
		var tick func()
		tick = func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.closed {
				return
			}
			// A failing sweep is retried at the next tick; Put and Sweep
			// callers see the same error themselves.
			if s.scan() == nil {
				s.makeRoom(0)
			}
			s.sweepTimer.Reset(every)
		}
		s.mu.Lock()
		s.sweepTimer = time.AfterFunc(every, tick)
		s.mu.Unlock()
	}
	return s, nil
}

// Close stops the background sweep. Stored results stay on disk (other
// processes may share the directory; their TTL still applies). Put and
// Get keep working after Close.
func (s *OffloadStore) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.sweepTimer != nil {
		s.sweepTimer.Stop()
	}
}

func validHandle(h string) bool {
	if len(h) != 34 || !strings.HasPrefix(h, "r-") {
		return false
	}
	for _, c := range h[2:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *OffloadStore) path(h string) string { return filepath.Join(s.dir, h+offloadSuffix) }

// Put stores data and returns its handle. Expired results are removed and,
// if needed, the oldest ones evicted to stay under the quota.
func (s *OffloadStore) Put(data []byte) (string, error) {
	return s.PutContext(context.Background(), data)
}

// offloadWriteChunk is how much PutContext writes between two checks of
// its context.
const offloadWriteChunk = 1 << 20

// PutContext is Put, given up when ctx ends: the data is written
// offloadWriteChunk bytes at a time, ctx checked before each, and a put
// given up leaves nothing behind (its temporary file is removed) and
// returns ctx's error. It fits Options.Offload, whose ctx ends at the
// filter call's deadline.
//
// A put is all or nothing: the result is written in full to a temporary
// file first, and only then are older results evicted to make room for
// it and the file renamed into place. (Evicting first lost the older
// results for nothing when the deadline came during the write.) The
// lock is held only for the eviction and the rename, not the write.
//
// Concurrent puts share one more quota for the bytes they are writing:
// a put whose data does not fit beside those in flight waits for them
// (or for ctx), so many large results offloaded at once cannot fill the
// disk with temporary files: the directory holds at most twice the
// quota, the stored results at most the quota.
func (s *OffloadStore) PutContext(ctx context.Context, data []byte) (string, error) {
	if int64(len(data)) > s.quota {
		return "", fmt.Errorf("%w: %d bytes, quota %d", ErrQuotaExceeded, len(data), s.quota)
	}
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	h := "r-" + hex.EncodeToString(rnd[:])
	if err := ctx.Err(); err != nil {
		return "", err
	}
	n := int64(len(data))
	if err := s.reserve(ctx, n); err != nil {
		return "", err
	}
	name, mod, err := s.writeTemp(ctx, data)
	if err != nil {
		s.mu.Lock()
		s.release(n)
		s.mu.Unlock()
		return "", fmt.Errorf("wasm: offload store: writing result: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.release(n)
	defer delete(s.writing, filepath.Base(name)) // renamed or removed by then
	if err := s.makeRoom(int64(len(data))); err != nil {
		os.Remove(name)
		return "", err
	}
	if err := renameResult(name, s.path(h)); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("wasm: offload store: writing result: %w", err)
	}
	s.add(&storedEntry{name: h + offloadSuffix, size: int64(len(data)), mod: mod})
	s.puts++
	return h, nil
}

// reserve waits until n more bytes being written fit the quota beside
// the other puts' (see OffloadStore.inflight), or ctx ends.
func (s *OffloadStore) reserve(ctx context.Context, n int64) error {
	for {
		s.mu.Lock()
		if s.inflight+n <= s.quota {
			s.inflight += n
			s.mu.Unlock()
			return nil
		}
		if s.released == nil {
			s.released = make(chan struct{})
		}
		ch := s.released
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives back n bytes reserve took and wakes the puts waiting.
// s.mu must be held.
func (s *OffloadStore) release(n int64) {
	s.inflight -= n
	if s.released != nil {
		close(s.released)
		s.released = nil
	}
}

// writeTemp writes data to a new 0600 temporary file in the store, ctx
// checked before each offloadWriteChunk bytes, and returns its name and
// time; on failure nothing is left behind.
func (s *OffloadStore) writeTemp(ctx context.Context, data []byte) (string, time.Time, error) {
	tmp, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return "", time.Time{}, err
	}
	name := tmp.Name()
	s.mu.Lock()
	if s.writing == nil {
		s.writing = make(map[string]bool)
	}
	s.writing[filepath.Base(name)] = true
	s.mu.Unlock()
	var werr error
	for rest := data; werr == nil && len(rest) > 0; {
		if werr = ctx.Err(); werr != nil {
			break
		}
		k := min(len(rest), offloadWriteChunk)
		_, werr = tmp.Write(rest[:k])
		rest = rest[k:]
	}
	var mod time.Time
	if werr == nil {
		var fi os.FileInfo
		if fi, werr = tmp.Stat(); werr == nil {
			mod = fi.ModTime()
		}
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(name, 0o600)
	}
	if werr != nil {
		os.Remove(name)
		s.mu.Lock()
		delete(s.writing, filepath.Base(name))
		s.mu.Unlock()
		return "", time.Time{}, werr
	}
	return name, mod, nil
}

type storedEntry struct {
	name string // file name in the store directory
	size int64
	mod  time.Time
	gone bool
}

// add records a stored result, keeping the queue ordered by time (results
// nearly always arrive in order: appended). Called with s.mu held.
func (s *OffloadStore) add(e *storedEntry) {
	if old := s.byName[e.name]; old != nil {
		s.drop(old)
	}
	s.byName[e.name] = e
	s.used += e.size
	i := len(s.queue)
	for i > 0 && s.queue[i-1].mod.After(e.mod) {
		i--
	}
	s.queue = slices.Insert(s.queue, i, e)
}

// drop forgets a result that is no longer stored. Called with s.mu held.
func (s *OffloadStore) drop(e *storedEntry) {
	if e.gone {
		return
	}
	e.gone = true
	delete(s.byName, e.name)
	s.used -= e.size
	s.gone++
	// Trim the front (only the front: makeRoom walks the queue by index).
	for len(s.queue) > 0 && s.queue[0].gone {
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.gone--
	}
}

// compact keeps the queue's garbage bounded: it drops the gone entries
// once they are half of it. Called with s.mu held, outside queue walks.
func (s *OffloadStore) compact() {
	if s.gone > 64 && s.gone > len(s.queue)/2 {
		live := make([]*storedEntry, 0, len(s.queue)-s.gone)
		for _, q := range s.queue {
			if !q.gone {
				live = append(live, q)
			}
		}
		s.queue, s.gone = live, 0
	}
}

// remove deletes a result's file and forgets it; a file already gone
// (another process removed it) is forgotten too. Called with s.mu held.
func (s *OffloadStore) remove(e *storedEntry) bool {
	err := os.Remove(filepath.Join(s.dir, e.name))
	if err == nil || errors.Is(err, os.ErrNotExist) {
		s.drop(e)
		return true
	}
	return false
}

// scan rebuilds the usage from the directory, removing expired results and
// temp files abandoned by crashed writers. Called with s.mu held.
func (s *OffloadStore) scan() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("wasm: offload store: %w", err)
	}
	now := s.now()
	s.byName = make(map[string]*storedEntry, len(ents))
	s.queue, s.gone, s.used = s.queue[:0], 0, 0
	for _, e := range ents {
		name := e.Name()
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(s.dir, name)
		if strings.HasPrefix(name, ".tmp-") {
			if now.Sub(fi.ModTime()) > time.Hour && !s.writing[name] { // abandoned by a crashed writer
				os.Remove(p)
			}
			continue
		}
		if !strings.HasSuffix(name, offloadSuffix) || !validHandle(strings.TrimSuffix(name, offloadSuffix)) {
			continue
		}
		if now.Sub(fi.ModTime()) > s.ttl {
			os.Remove(p)
			continue
		}
		s.byName[name] = &storedEntry{name: name, size: fi.Size(), mod: fi.ModTime()}
	}
	s.queue = slices.Grow(s.queue, len(s.byName))
	for _, e := range s.byName {
		s.queue = append(s.queue, e)
		s.used += e.size
	}
	slices.SortFunc(s.queue, func(a, b *storedEntry) int { return a.mod.Compare(b.mod) })
	s.scanned, s.puts, s.lastScan = true, 0, now
	return nil
}

// makeRoom removes expired results and evicts the oldest until need more
// bytes fit under the quota. Called with s.mu held.
func (s *OffloadStore) makeRoom(need int64) error {
	now := s.now()
	rescanned := false
	if !s.scanned || s.puts >= offloadRescanPuts || now.Sub(s.lastScan) >= offloadRescanEvery || now.Before(s.lastScan) {
		if err := s.scan(); err != nil {
			return err
		}
		rescanned = true
	}
	for {
		// Expired results are the oldest: they lead the queue.
		for i := 0; i < len(s.queue) && now.Sub(s.queue[i].mod) > s.ttl; {
			if e := s.queue[i]; e.gone || !s.remove(e) {
				i++
			}
		}
		for i := 0; s.used+need > s.quota && i < len(s.queue); {
			if e := s.queue[i]; e.gone || !s.remove(e) {
				i++
			}
		}
		s.compact()
		if s.used+need <= s.quota {
			return nil
		}
		if rescanned {
			return fmt.Errorf("%w: could not free %d bytes", ErrQuotaExceeded, need)
		}
		// The accounting may be stale (another process removed results):
		// look at the directory once before giving up.
		if err := s.scan(); err != nil {
			return err
		}
		rescanned = true
	}
}

// Get returns up to length bytes (1..MaxOffloadPage; 0 = MaxOffloadPage) of
// the result stored under handle, starting at offset.
func (s *OffloadStore) Get(handle string, offset, length int64) (OffloadChunk, error) {
	if !validHandle(handle) {
		return OffloadChunk{}, ErrHandleInvalid
	}
	if length <= 0 || length > MaxOffloadPage {
		length = MaxOffloadPage
	}
	if offset < 0 {
		return OffloadChunk{}, fmt.Errorf("%w: negative offset %d", ErrOffsetOutOfRange, offset)
	}
	f, err := openResult(s.path(handle))
	if errors.Is(err, os.ErrNotExist) {
		return OffloadChunk{}, ErrHandleUnknown
	}
	if err != nil {
		return OffloadChunk{}, fmt.Errorf("wasm: offload store: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return OffloadChunk{}, fmt.Errorf("wasm: offload store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return OffloadChunk{}, fmt.Errorf("%w: %s is not a regular file", ErrHandleNotRegular, handle)
	}
	if s.now().Sub(fi.ModTime()) > s.ttl {
		s.mu.Lock()
		if e := s.byName[handle+offloadSuffix]; e != nil {
			s.remove(e)
			s.compact()
		} else {
			os.Remove(s.path(handle))
		}
		s.mu.Unlock()
		return OffloadChunk{}, ErrHandleExpired
	}
	total := fi.Size()
	if offset > total || offset == total && total > 0 {
		return OffloadChunk{}, fmt.Errorf("%w: offset %d, result is %d bytes", ErrOffsetOutOfRange, offset, total)
	}
	n := min(length, total-offset)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, offset); err != nil && !errors.Is(err, io.EOF) {
		return OffloadChunk{}, fmt.Errorf("wasm: offload store: %w", err)
	}
	return OffloadChunk{Data: buf, Offset: offset, Total: total, More: offset+n < total}, nil
}

// Sweep removes expired results and abandoned temp files (reading the
// whole directory, which also refreshes the usage accounting).
func (s *OffloadStore) Sweep() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.scan(); err != nil {
		return err
	}
	return s.makeRoom(0)
}

// usage reports the accounted bytes and results (for tests).
func (s *OffloadStore) usage() (int64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, len(s.byName)
}

package wasm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
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
)

// OffloadOptions configures an OffloadStore; zero values mean the defaults.
type OffloadOptions struct {
	Dir        string        // required; created 0700 if missing
	TTL        time.Duration // default 24h
	QuotaBytes int64         // total bytes kept; default 256 MiB; oldest results are evicted to make room
	Now        func() time.Time
}

// OffloadStore keeps offloaded results as files named by opaque handles:
// 0700 directory, 0600 files, written atomically (temp file + rename),
// expired after TTL, total size held under a quota by evicting the oldest.
// Its Put method fits Options.Offload. Safe for concurrent use; several
// processes may share a directory (the quota is then approximate).
type OffloadStore struct {
	dir   string
	ttl   time.Duration
	quota int64
	now   func() time.Time
	mu    sync.Mutex
}

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
	if fi.Mode().Perm()&0o077 != 0 {
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
	return s, nil
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
	if int64(len(data)) > s.quota {
		return "", fmt.Errorf("%w: %d bytes, quota %d", ErrQuotaExceeded, len(data), s.quota)
	}
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	h := "r-" + hex.EncodeToString(rnd[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.makeRoom(int64(len(data))); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("wasm: offload store: %w", err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(name, 0o600)
	}
	if werr == nil {
		werr = os.Rename(name, s.path(h))
	}
	if werr != nil {
		os.Remove(name)
		return "", fmt.Errorf("wasm: offload store: writing result: %w", werr)
	}
	return h, nil
}

type storedEntry struct {
	path string
	size int64
	mod  time.Time
}

// makeRoom removes expired results and evicts the oldest until need more
// bytes fit under the quota. Called with s.mu held.
func (s *OffloadStore) makeRoom(need int64) error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("wasm: offload store: %w", err)
	}
	now := s.now()
	var live []storedEntry
	var used int64
	for _, e := range ents {
		name := e.Name()
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(s.dir, name)
		if strings.HasPrefix(name, ".tmp-") {
			if now.Sub(fi.ModTime()) > time.Hour { // abandoned by a crashed writer
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
		live = append(live, storedEntry{p, fi.Size(), fi.ModTime()})
		used += fi.Size()
	}
	if used+need <= s.quota {
		return nil
	}
	sort.Slice(live, func(i, j int) bool { return live[i].mod.Before(live[j].mod) })
	for _, e := range live {
		if used+need <= s.quota {
			break
		}
		if os.Remove(e.path) == nil {
			used -= e.size
		}
	}
	if used+need > s.quota {
		return fmt.Errorf("%w: could not free %d bytes", ErrQuotaExceeded, need)
	}
	return nil
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
	f, err := os.Open(s.path(handle))
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
	if s.now().Sub(fi.ModTime()) > s.ttl {
		os.Remove(s.path(handle))
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

// Sweep removes expired results and abandoned temp files.
func (s *OffloadStore) Sweep() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.makeRoom(0)
}

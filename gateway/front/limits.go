package front

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// connLimiter caps the connections one remote IP address holds open at
// once. A connection over the cap is answered 503 and closed at accept,
// before the HTTP server spends a goroutine or a read on it.
type connLimiter struct {
	net.Listener
	max     int
	metrics *Metrics
	log     *slog.Logger

	mu    sync.Mutex
	perIP map[string]int
}

func newConnLimiter(ln net.Listener, max int, m *Metrics, log *slog.Logger) *connLimiter {
	return &connLimiter{Listener: ln, max: max, metrics: m, log: log, perIP: map[string]int{}}
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c.RemoteAddr())
		l.mu.Lock()
		n := l.perIP[ip]
		if n >= l.max {
			l.mu.Unlock()
			l.refuse(c, ip)
			continue
		}
		l.perIP[ip] = n + 1
		l.mu.Unlock()
		return &limitedConn{Conn: c, l: l, ip: ip}, nil
	}
}

// refuse answers a connection over the cap without reading from it. The
// answer is small enough for the socket's send buffer, so the write does
// not block accepting; the deadline is a guard.
func (l *connLimiter) refuse(c net.Conn, ip string) {
	l.metrics.HTTPLimit("connection_refused")
	l.log.Warn("refused a connection: too many open from this address", "remote", ip, "cap", l.max)
	body := fmt.Sprintf("Service Unavailable: this address already has %d connections open to sluice (the per-client cap); close idle ones and retry\n", l.max)
	msg := fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s", len(body), body)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte(msg))
	_ = c.Close()
}

func (l *connLimiter) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perIP[ip] <= 1 {
		delete(l.perIP, ip)
		return
	}
	l.perIP[ip]--
}

// open reports how many connections ip holds (for tests).
func (l *connLimiter) open(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perIP[ip]
}

type limitedConn struct {
	net.Conn
	l    *connLimiter
	ip   string
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}

// CloseWrite half-closes the connection when the underlying one can, so
// the HTTP server's lingering close sends its FIN first.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	s := a.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}

// sessionTable caps legacy HTTP sessions and closes idle ones. It knows
// each session's last request and how many POSTs it has in flight; a new
// session over the cap evicts the one idle the longest. A session with no
// POST in flight for the idle timeout is closed (a GET stream does not
// keep it alive), as the SDK would close it.
type sessionTable struct {
	max     int
	timeout time.Duration   // 0: never
	expire  func(id string) // closes an idle session

	mu      sync.Mutex
	s       map[string]*sessionUse
	pending int // new sessions admitted, not yet registered
}

type sessionUse struct {
	last  time.Time
	posts int
	idle  *time.Timer // closes the session once idle for the timeout
}

func newSessionTable(max int, timeout time.Duration, expire func(id string)) *sessionTable {
	return &sessionTable{max: max, timeout: timeout, expire: expire, s: map[string]*sessionUse{}}
}

// admit reserves room for one new session. live reports the ids of the
// sessions still open (others are forgotten); evict closes one. It
// returns the evicted id ("" if none) and false when the cap is reached
// and no session is idle.
func (t *sessionTable) admit(live func() map[string]bool, evict func(id string)) (string, bool) {
	alive := live()
	t.mu.Lock()
	for id, u := range t.s {
		if !alive[id] {
			u.stop()
			delete(t.s, id)
		}
	}
	if len(t.s)+t.pending < t.max {
		t.pending++
		t.mu.Unlock()
		return "", true
	}
	var oldest string
	var at time.Time
	for id, u := range t.s {
		if u.posts == 0 && (oldest == "" || u.last.Before(at)) {
			oldest, at = id, u.last
		}
	}
	if oldest == "" {
		t.mu.Unlock()
		return "", false
	}
	t.s[oldest].stop()
	delete(t.s, oldest)
	t.pending++
	t.mu.Unlock()
	evict(oldest)
	return oldest, true
}

// admitted ends a reservation; id is the new session's id, "" when the
// request made none.
func (t *sessionTable) admitted(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending--
	if id != "" {
		u := &sessionUse{last: time.Now()}
		if t.timeout > 0 {
			u.idle = time.AfterFunc(t.timeout, func() { t.expired(id, u) })
		}
		t.s[id] = u
	}
}

// expired closes session id once its idle timer fired, unless a POST
// started in between.
func (t *sessionTable) expired(id string, u *sessionUse) {
	t.mu.Lock()
	if t.s[id] != u || u.posts > 0 {
		t.mu.Unlock()
		return
	}
	delete(t.s, id)
	t.mu.Unlock()
	t.expire(id)
}

func (u *sessionUse) stop() {
	if u.idle != nil {
		u.idle.Stop()
	}
}

// use marks a request of session id; post requests count as in flight
// (the idle timer paused) until the returned func runs. Unknown ids are
// left to the SDK.
func (t *sessionTable) use(id string, post bool) func() {
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.s[id]
	if u == nil {
		return func() {}
	}
	u.last = time.Now()
	if !post {
		return func() {}
	}
	u.posts++
	if u.posts == 1 {
		u.stop()
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		u.posts--
		u.last = time.Now()
		if u.posts == 0 && u.idle != nil && t.s[id] == u {
			u.idle.Reset(t.timeout)
		}
	}
}

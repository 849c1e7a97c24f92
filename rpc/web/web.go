// Package web serves the WebUI and Bridge's JSON-RPC contract over a
// WebSocket, on a loopback address only. It is the second transport of the
// one rpc server: `/rpc` speaks exactly what stdio speaks, one JSON-RPC
// message per WebSocket text message.
//
// Access needs the per-start token (`/rpc?token=TOKEN`); a request whose
// Host is not a loopback name is refused (DNS rebinding), as is a WebSocket
// upgrade from another origin.
package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/bridge-dev/bridge/rpc"
)

// Options configures a Server.
type Options struct {
	// Token is the access token; "" means a random one.
	Token string
	// RPC configures the rpc server run on every WebSocket connection.
	RPC rpc.Config
	// Assets are the WebUI's static files (index.html at the root).
	Assets fs.FS
	// Logger receives diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// QueueMessages and QueueBytes bound each connection's send queue
	// (DefaultQueueMessages, DefaultQueueBytes when zero): a client that
	// falls further behind is disconnected with CloseFellBehind.
	QueueMessages int
	QueueBytes    int64
}

// Server is the HTTP side of `bridge web`.
type Server struct {
	opts  Options
	token string
	log   *slog.Logger
	port  string // the listening port, set by Serve
	ctx   context.Context
	csp   string       // the Content-Security-Policy of every static file
	conns atomic.Int64 // WebSocket connections accepted, numbering them in the log
}

// NewToken returns a random access token (128 bits, hex).
func NewToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("web: making a token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// New makes a server; it does not listen yet.
func New(opts Options) (*Server, error) {
	tok := opts.Token
	if tok == "" {
		var err error
		if tok, err = NewToken(); err != nil {
			return nil, err
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Assets == nil {
		return nil, errors.New("web: Options.Assets is nil")
	}
	index, _ := fs.ReadFile(opts.Assets, "index.html")
	return &Server{opts: opts, token: tok, log: log, ctx: context.Background(), csp: policy(index)}, nil
}

// Token is the access token.
func (s *Server) Token() string { return s.token }

// Listen opens a TCP listener on addr, which must be a loopback address or
// "localhost" (with a port; port 0 picks a free one).
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w (want HOST:PORT, e.g. 127.0.0.1:8080)", addr, err)
	}
	if !loopbackName(host) {
		return nil, fmt.Errorf("--listen %q: refusing a non-loopback address; bridge web serves only 127.0.0.1, ::1 or localhost, because anyone who can reach it can drive your coding agents", addr)
	}
	if host == "localhost" {
		// Bind the IPv4 loopback: "localhost" may resolve elsewhere.
		addr = net.JoinHostPort("127.0.0.1", addr[strings.LastIndex(addr, ":")+1:])
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", addr, err)
	}
	return ln, nil
}

// loopbackName reports whether host (no port) names the loopback interface.
func loopbackName(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL is the address that opens the WebUI with the token, for a listener
// at addr. The token travels in the fragment, which browsers never send to
// a server or in a Referer header.
func (s *Server) URL(addr net.Addr) string {
	return fmt.Sprintf("http://%s/#token=%s", addr.String(), s.token)
}

// Serve serves HTTP on ln until ctx ends; then it stops accepting, closes
// the WebSocket connections and returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s.port = port
	s.ctx = ctx
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}

// Handler is the server's HTTP handler: the Host check, then /rpc or the
// static files.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			http.Error(w, "forbidden: the Host header does not name this loopback server", http.StatusForbidden)
			return
		}
		if r.URL.Path == "/rpc" {
			s.rpc(w, r)
			return
		}
		s.static(w, r)
	})
}

// hostAllowed accepts a loopback name, with this server's port when known.
func (s *Server) hostAllowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	if !loopbackName(host) {
		return false
	}
	return s.port == "" || port == s.port
}

// originAllowed accepts the served origin: http, a loopback name, this
// server's port.
func (s *Server) originAllowed(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Path != "" && u.Path != "/" {
		return false
	}
	if !loopbackName(u.Hostname()) {
		return false
	}
	p := u.Port()
	if p == "" {
		p = "80"
	}
	return s.port == "" || p == s.port
}

// rpc upgrades to a WebSocket and runs the rpc server on it.
func (s *Server) rpc(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		http.Error(w, "unauthorized: /rpc needs ?token= with the token bridge web printed", http.StatusUnauthorized)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o) {
		http.Error(w, "forbidden: WebSocket upgrade from another origin", http.StatusForbidden)
		return
	}
	// The origin was checked above, against every loopback spelling of
	// this server (the library's own check compares with Host only).
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		s.log.Debug("web: WebSocket upgrade failed", "error", err)
		return
	}
	c.SetReadLimit(-1) // ServeMessages bounds messages itself
	// Everything logged about this connection names it.
	attrs := []any{"conn", s.conns.Add(1), "remote", r.RemoteAddr}
	log := s.log.With(attrs...)
	cfg := s.opts.RPC
	if cfg.Logger != nil {
		cfg.Logger = cfg.Logger.With(attrs...)
	} else {
		cfg.Logger = log
	}
	log.Debug("web: connection opened")
	conn := newWSConn(c, queueLimits{messages: s.opts.QueueMessages, bytes: s.opts.QueueBytes}, log)
	code, err := rpc.ServeMessages(s.ctx, conn, cfg)
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Debug("web: connection ended", "exitCode", code, "error", err)
	}
}

// static serves the WebUI's files. They carry no data: everything comes
// over /rpc.
func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	data, err := fs.ReadFile(s.opts.Assets, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentType(name))
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", s.csp)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(data)
}

// policy is the Content-Security-Policy for a page: its own inline scripts
// and stylesheets allowed by their SHA-256 hashes, and the scripts it loads
// by the SHA-256 their integrity attribute holds (index.html loads the
// WebUI's app.js so; the browser runs it only when its bytes have that
// hash), or the server's files ('self') when it has none; never
// 'unsafe-inline', no foreign script, no plugins: markup that slips into
// the page still cannot run.
func policy(page []byte) string {
	src := func(tag string) string {
		hashes := inlineHashes(string(page), tag)
		if len(hashes) == 0 {
			return "'self'"
		}
		return strings.Join(hashes, " ")
	}
	return "default-src 'none'; script-src " + src("script") + "; style-src " + src("style") +
		"; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// inlineHashes returns the CSP hash sources ('sha256-…') of the contents of
// the inline <tag> elements of page (those without a src attribute), and of
// those with a src attribute, the sha256 of their integrity attribute.
func inlineHashes(page, tag string) []string {
	var out []string
	lower := strings.ToLower(page)
	open, end := "<"+tag, "</"+tag
	for i := 0; ; {
		j := strings.Index(lower[i:], open)
		if j < 0 {
			return out
		}
		start := i + j + len(open)
		gt := strings.IndexByte(lower[start:], '>')
		if gt < 0 {
			return out
		}
		attrs := lower[start : start+gt]
		body := start + gt + 1
		k := strings.Index(lower[body:], end)
		if k < 0 {
			return out
		}
		switch {
		case attrs != "" && attrs[0] != ' ':
			// another element (<scripts>, <styles…>)
		case !strings.Contains(attrs, "src="):
			sum := sha256.Sum256([]byte(page[body : body+k]))
			out = append(out, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
		default:
			if m := integrityAttr.FindStringSubmatch(page[start : start+gt]); m != nil {
				out = append(out, "'"+m[1]+"'")
			}
		}
		i = body + k
	}
}

// integrityAttr is an integrity attribute holding one SHA-256 (base64).
var integrityAttr = regexp.MustCompile(`\sintegrity="(sha256-[A-Za-z0-9+/]{43}=)"`)

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".json":
		return "application/json"
	}
	return "application/octet-stream"
}

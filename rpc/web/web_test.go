package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func TestListenRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.7:80", "example.com:80", ":0", "nonsense"} {
		if ln, err := Listen(addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) accepted a non-loopback address", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.2:0"} {
		ln, err := Listen(addr)
		if err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		ln.Close()
	}
}

func TestHostAndOrigin(t *testing.T) {
	s := &Server{port: "8123"}
	for host, want := range map[string]bool{
		"127.0.0.1:8123": true, "localhost:8123": true, "[::1]:8123": true, "LOCALHOST:8123": true,
		"127.0.0.1:9999": false, "evil.example:8123": false, "127.0.0.1.nip.io:8123": false, "": false,
	} {
		if got := s.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
	for origin, want := range map[string]bool{
		"http://127.0.0.1:8123": true, "http://localhost:8123": true, "http://[::1]:8123": true,
		"https://127.0.0.1:8123": false, "http://127.0.0.1:8124": false, "http://evil.example:8123": false,
		"null": false, "http://127.0.0.1": false, "file://": false,
	} {
		if got := s.originAllowed(origin); got != want {
			t.Errorf("originAllowed(%q) = %v, want %v", origin, got, want)
		}
	}
}

// TestInlinePolicy: a page's inline script and stylesheet are allowed by
// their SHA-256 hashes, a script it loads by the SHA-256 of its integrity
// attribute, and nothing else is (a script without one, 'unsafe-inline',
// 'self'); a page without any gets 'self'.
func TestInlinePolicy(t *testing.T) {
	page := `<!doctype html><head><style>p{color:red}</style><script type="module">go("</p>")</script>` +
		`<script src="x.js"></script><script type="module" src="app.js" integrity="sha256-n9IrMte0Uom2zsGuykQjlLw/yJfwb0jlcFB4Pan+HOQ="></script>` +
		`<script src="y.js" integrity="sha384-x"></script></head><body><p>hi</p></body>`
	s, err := New(Options{Assets: fstest.MapFS{"index.html": {Data: []byte(page)}}})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Host = "127.0.0.1:1"
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	// sha256 of `go("</p>")` and of `p{color:red}`, base64.
	want := "default-src 'none'; script-src 'sha256-nUbDOQczugEK40MB3OogmhVXYLv82pA7o+lAcnhQd6o=' 'sha256-n9IrMte0Uom2zsGuykQjlLw/yJfwb0jlcFB4Pan+HOQ='; " +
		"style-src 'sha256-p0bF+un5yUb9MBO6xRb8kPHlY2BdpHVtLiFkDrZPF64='; img-src 'self' data: blob:; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	if got := w.Header().Get("Content-Security-Policy"); got != want {
		t.Fatalf("CSP\n got %s\nwant %s", got, want)
	}
	if strings.Contains(policy([]byte(page)), "unsafe") {
		t.Fatal("unsafe-inline in the policy")
	}
	if got := policy([]byte("<p>hi</p>")); !strings.Contains(got, "script-src 'self'; style-src 'self';") {
		t.Fatalf("a page without inline code: %s", got)
	}
}

func TestHandler(t *testing.T) {
	s, err := New(Options{Token: "secret", Assets: fstest.MapFS{"index.html": {Data: []byte("<p>hi</p>")}}})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	do := func(target, host string, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.Host = host
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do("/", "127.0.0.1:1", nil); w.Code != 200 || !strings.Contains(w.Header().Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("GET /: %d %v", w.Code, w.Header())
	}
	if w := do("/", "evil.example", nil); w.Code != 403 {
		t.Fatalf("foreign Host: %d, want 403", w.Code)
	}
	if w := do("/rpc", "127.0.0.1:1", nil); w.Code != 401 {
		t.Fatalf("/rpc without token: %d, want 401", w.Code)
	}
	if w := do("/rpc?token=secret", "127.0.0.1:1", map[string]string{"Origin": "http://evil.example"}); w.Code != 403 {
		t.Fatalf("/rpc from another origin: %d, want 403", w.Code)
	}
	if w := do("/missing.js", "127.0.0.1:1", nil); w.Code != 404 {
		t.Fatalf("missing file: %d, want 404", w.Code)
	}
}

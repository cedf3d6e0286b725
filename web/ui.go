// The dashboard. mmkd serves a single-page front end at / (ui.go,
// web/ui/): how each GPU is cut, the jobs, the kernel schedulers and the
// reconfiguration history, kept live by GET /api/v1/stream (stream.go).
//
// It is plain HTML, CSS and JavaScript modules, embedded in the binary
// with no build step: mmk's machines are often offline and its CI has no
// JavaScript toolchain, a few screens of tables and boxes do not need a
// framework, and what is served is what is in the repository, so a
// reviewer reads the code the browser runs. The page loads nothing from
// any host but the daemon (no CDN, no web fonts), which its
// Content-Security-Policy enforces. It writes every value with
// textContent (or as canvas text), never as HTML, since job names,
// commands and logs are user input.
//
// The assets hold no data and are served without the token; every data
// request of the page carries it (see docs/dashboard.md).
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// uiFiles are the dashboard's assets: index.html, the style sheet, the
// JavaScript modules and the icon, one flat folder.
//
//go:embed ui
var uiFiles embed.FS

// ContentSecurityPolicy is the policy the dashboard is served with: every
// script, style, image, font and connection from the daemon itself, no
// inline script or style, no plugin, no framing, forms posted nowhere
// else.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; " +
	"connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// uiAsset is an embedded file ready to serve.
type uiAsset struct {
	body  []byte
	ctype string
	etag  string
}

// uiAssets reads the embedded files once: name -> asset.
var uiAssets = sync.OnceValue(func() map[string]uiAsset {
	out := map[string]uiAsset{}
	entries, err := fs.ReadDir(uiFiles, "ui")
	if err != nil {
		panic("web: the embedded dashboard is missing: " + err.Error())
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		body, err := uiFiles.ReadFile("ui/" + e.Name())
		if err != nil {
			panic("web: read the embedded dashboard: " + err.Error())
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(e.Name()))
		switch path.Ext(e.Name()) {
		case ".js":
			// The system's MIME table may lack it or say
			// application/javascript; modules need a JavaScript type.
			ctype = "text/javascript; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		}
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		out[e.Name()] = uiAsset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return out
})

// uiIndex serves GET /: the dashboard's page.
func (s *Server) uiIndex(c *gin.Context) {
	s.serveAsset(c, "index.html")
}

// uiAsset serves GET /ui/FILE: a file of the dashboard, or 404.
func (s *Server) uiAsset(c *gin.Context) {
	name := strings.TrimPrefix(c.Param("file"), "/")
	s.serveAsset(c, name)
}

func (s *Server) serveAsset(c *gin.Context, name string) {
	a, ok := uiAssets()[name]
	if !ok || strings.Contains(name, "/") {
		s.writeError(c, &apiError{Status: http.StatusNotFound, Message: "no dashboard file " + truncate(name, 80)})
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Type", a.ctype)
	// Revalidated on each load (a new mmkd may serve new files); the
	// ETag makes that a 304.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(c.Writer, c.Request, name, time.Time{}, bytes.NewReader(a.body))
}

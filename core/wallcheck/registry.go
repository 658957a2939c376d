package wallcheck

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// RegistryPackage is the one package the registry stand-in serves.
const RegistryPackage = "openworker-check-dep"

// registryPackageSays is what the package exports, which the npm probe prints.
const registryPackageSays = "installed from the registry"

// Registry is a tiny npm registry on 127.0.0.1, outside the wall: one package, one version,
// its tarball made in memory. It lets the battery prove npm install (its cache, its links)
// without the internet.
type Registry struct {
	Port int
	// Served counts the tarballs served: an install that got it went through.
	Served atomic.Int32
	// Requests counts every request, metadata included: an install that needed nothing
	// from the registry made none.
	Requests atomic.Int32
	// Tarball and Integrity are the package's URL and integrity, as a lockfile names them.
	Tarball, Integrity string

	srv *http.Server
}

// ServeRegistry starts the registry stand-in on 127.0.0.1; Close stops it.
func ServeRegistry() (*Registry, error) {
	tgz, err := packageTarball()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Registry{Port: ln.Addr().(*net.TCPAddr).Port}
	base := "http://127.0.0.1:" + strconv.Itoa(r.Port) + "/"
	file := RegistryPackage + "-1.0.0.tgz"
	sha := sha1.Sum(tgz)
	sum := sha512.Sum512(tgz)
	r.Tarball = base + RegistryPackage + "/-/" + file
	r.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	doc, err := json.Marshal(map[string]any{
		"name":      RegistryPackage,
		"dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": RegistryPackage, "version": "1.0.0", "main": "index.js",
			"dist": map[string]string{
				"tarball":   r.Tarball,
				"shasum":    hex.EncodeToString(sha[:]),
				"integrity": r.Integrity,
			},
		}},
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /"+RegistryPackage, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})
	mux.HandleFunc("GET /"+RegistryPackage+"/-/"+file, func(w http.ResponseWriter, _ *http.Request) {
		r.Served.Add(1)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(tgz)
	})
	counted := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Requests.Add(1)
		mux.ServeHTTP(w, req)
	})
	r.srv = &http.Server{Handler: counted, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ln.Close()
		}
	}()
	return r, nil
}

// Close stops the registry.
func (r *Registry) Close() error { return r.srv.Close() }

// packageTarball is the package as npm packs it: package/package.json and package/index.js,
// tarred and gzipped.
func packageTarball() ([]byte, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	files := []struct{ name, body string }{
		{"package/package.json", `{"name":"` + RegistryPackage + `","version":"1.0.0","main":"index.js"}` + "\n"},
		{"package/index.js", `module.exports = "` + registryPackageSays + `";` + "\n"},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg, ModTime: time.Unix(499162500, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

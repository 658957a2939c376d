package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/openworker/openworker/core/tstest"
	"go.uber.org/goleak"
)

func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors here: %v", err)
	}
	return len(ents)
}

// TestNoLeaksAfterLoad runs many tunnels and forwarded requests at once, closes the proxy,
// and checks that no goroutine and no descriptor of the proxy is left.
func TestNoLeaksAfterLoad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("descriptor counts are read from /proc")
	}
	origin := httptest.NewServer(http.HandlerFunc(hello))
	defer origin.Close()
	echo := echoServer(t, "tcp4", "127.0.0.1:0")
	opts := goleak.IgnoreCurrent()
	before := openFDs(t)

	s := startProxy(t, Options{}, echo.Addr().String(), "127.0.0.1:"+strconv.Itoa(originPort(t, origin)))
	addr := "127.0.0.1:" + strconv.Itoa(s.port)
	const workers = 100
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, resp := rawConnect(t, addr, echo.Addr().String(), basic(User, s.tok))
			defer c.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("CONNECT: %s", resp.Status)
				return
			}
			msg := []byte("message " + strconv.Itoa(i))
			for range 20 {
				c.Write(msg)
				if _, err := io.ReadFull(c, make([]byte, len(msg))); err != nil {
					errs <- err
					return
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newClient(t, s.proxyURL(), nil)
			for range 5 {
				resp, err := cl.Get(origin.URL + "/load")
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			cl.Transport.(*http.Transport).CloseIdleConnections()
		}()
	}
	// Half the tunnels are left open when the proxy closes.
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := goleak.Find(opts); err != nil {
		t.Fatal(err)
	}
	tstest.WaitFor(t, 5*time.Second, func() error {
		if after := openFDs(t); after > before {
			return fmt.Errorf("%d descriptors open before the load, %d after the proxy closed", before, after)
		}
		return nil
	})
}

package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/lockharness/lockharness/reports"
)

func cmdServe(args []string, stdout, stderr io.Writer) int {
	c := newCommand("serve", "[flags]", "Serves the store: a page of every run, newest first, with its verdict, and every\n"+
		"file under the store as it is, so a run's index.html and its links work.")
	store := c.storeFlag("")
	addr := c.String("addr", "127.0.0.1:8080", "address to listen on (loopback unless you mean to share it)")
	pos, code, ok := c.parse(args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.fail(stderr, "unexpected argument %q", pos[0])
	}
	handler, err := reports.NewServer(*store)
	if err != nil {
		fmt.Fprintf(stderr, "harness serve: %v\n", err)
		return exitHarness
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "harness serve: %v\n", err)
		return exitHarness
	}
	if host, _, _ := net.SplitHostPort(*addr); host != "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			fmt.Fprintf(stderr, "harness serve: warning: listening on %s, not only on loopback\n", *addr)
		}
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := interruptible(stderr)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	fmt.Fprintf(stdout, "serving %s on http://%s/ (Ctrl-C to stop)\n", *store, ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "harness serve: %v\n", err)
		return exitHarness
	}
	return 0
}

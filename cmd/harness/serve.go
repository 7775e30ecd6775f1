package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/lockharness/lockharness/reports"
)

func cmdServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	store := fs.String("store", "store", "directory that keeps run directories")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (loopback unless you mean to share it)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
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
	srv := &http.Server{Handler: reports.NewServer(*store), ReadHeaderTimeout: 10 * time.Second}
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

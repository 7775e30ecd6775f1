package cluster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
)

// busRouter is the address one cluster node announces for its cluster bus.
// Every peer dials it from its own source address (bind-source-addr) and
// the router hands each connection to that pair's link, so that gossip and
// failure detection can be cut one pair and one direction at a time.
// Without it a node whose own links are cut still reaches its peers through
// theirs, and Redis counts its gossip as a sign of life: it is never failed
// over.
//
// The same router serves an etcd member's peer traffic, whose senders all
// dial from 127.0.0.1 but name themselves in every request (etcdSender).
type busRouter struct {
	ln net.Listener
	// links maps a peer, as sender tells it, to the address of its link to
	// node; under mu, since routes are added while the router serves
	// (route, alias).
	links map[string]string
	// sender tells which peer a connection comes from; it may peek at
	// the start of the connection through r, which forward passes on.
	sender func(c net.Conn, r *bufio.Reader) string
	mu     sync.Mutex
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// newBusRouter listens on a free port of 127.0.0.1 for node's bus.
// The peers are told apart by their source IPs.
func newBusRouter(node string, links map[string]string) (*busRouter, error) {
	return newRouter(node, links, sourceOf)
}

// sourceOf tells a peer by the address it dials from.
func sourceOf(c net.Conn, _ *bufio.Reader) string { return c.RemoteAddr().(*net.TCPAddr).IP.String() }

// newRouter listens on a free port of 127.0.0.1 for node's peers, told
// apart by sender.
func newRouter(node string, links map[string]string, sender func(net.Conn, *bufio.Reader) string) (*busRouter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("node %s: the address its peers dial: %w", node, err)
	}
	r := &busRouter{ln: ln, links: links, sender: sender, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

func (r *busRouter) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// route hands connections from sender to the link at addr.
func (r *busRouter) route(sender, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.links[sender] = addr
}

// alias routes connections from sender as those from from are routed (an
// etcd member added back under a new ID).
func (r *busRouter) alias(sender, from string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	addr, ok := r.links[from]
	if !ok {
		return fmt.Errorf("the router of %s routes no peer %q", r.ln.Addr(), from)
	}
	r.links[sender] = addr
	return nil
}

func (r *busRouter) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go r.forward(c)
	}
}

// forward joins a peer's connection to the peer's link; a connection from
// no peer is refused.
func (r *busRouter) forward(c net.Conn) {
	defer r.wg.Done()
	in := bufio.NewReader(c)
	from := r.sender(c, in)
	r.mu.Lock()
	to, ok := r.links[from]
	r.mu.Unlock()
	if !ok {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", to)
	if err != nil {
		c.Close()
		return
	}
	if !r.track(c, up) {
		return
	}
	defer r.untrack(c, up)
	done := make(chan struct{}, 2)
	pipe := func(dst net.Conn, from io.Reader, src net.Conn) {
		io.Copy(dst, from)
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(up, in, c) // what sender read first, then the rest
	go pipe(c, up, up)
	<-done
	<-done
}

func (r *busRouter) track(conns ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		r.conns[c] = true
	}
	return true
}

func (r *busRouter) untrack(conns ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range conns {
		delete(r.conns, c)
	}
}

// close stops listening and cuts every connection.
func (r *busRouter) close() {
	r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
}

package cluster

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// The router learns a Raft request's sender from its head without taking
// a byte from the stream it passes on, whether the head arrives at once or
// a few bytes at a time; a head that names no one goes through the
// member's own link.
func TestEtcdSenderPeeksAtTheHead(t *testing.T) {
	head := "GET /raft/stream/message/8e9e05c52164694d HTTP/1.1\r\nHost: 127.0.0.1:2380\r\nX-Server-From: 91bc3c398fb3c146\r\nX-Raft-To: 8e9e05c52164694d\r\n\r\n"
	for _, tc := range []struct {
		name, data string
		chunk      int
		want       string
	}{
		{"at once", head + "body", len(head) + 4, "91bc3c398fb3c146"},
		{"three bytes at a time", head, 3, "91bc3c398fb3c146"},
		{"no sender", "GET /version HTTP/1.1\r\nHost: x\r\n\r\n", 5, ""},
		{"not http", "\x00\x01binary", 9, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			go func() {
				for i := 0; i < len(tc.data); i += tc.chunk {
					client.Write([]byte(tc.data[i:min(i+tc.chunk, len(tc.data))]))
					time.Sleep(time.Millisecond)
				}
				client.Close()
			}()
			r := bufio.NewReader(server)
			if got := etcdSender(server, r); got != tc.want {
				t.Errorf("sender %q, want %q", got, tc.want)
			}
			rest, _ := io.ReadAll(r)
			if string(rest) != tc.data {
				t.Errorf("passed on %q, want all of %q", rest, tc.data)
			}
		})
	}
	if id := etcdMemberID("http://127.0.0.1:2380", "tok"); strings.Trim(id, "0123456789abcdef") != "" || len(id) > 16 {
		t.Errorf("member ID %q is not hex", id)
	}
}

package locks

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"errors"
	"strings"
	"testing"
	"time"
)

// The etcd client's keepalives become extends of the lease they renew:
// one extend from the first request to the last answer while answers are
// late, a missing lease's answer not-held, a broken stream unknown, and
// the answers to requests sent before the lease was watched left out (a
// stream answers in order).
func TestKeepAlivesBecomeExtends(t *testing.T) {
	var got []string
	k := &keepAlives{leases: map[clientv3.LeaseID]*watchedLease{}, observe: func(o Op) {
		s := o.F + " " + o.Outcome
		if o.Err != nil {
			s += ": " + o.Err.Error()
		}
		got = append(got, s)
	}}
	const id = 7
	lease := Lease{Key: "k", Token: "t"}
	k.sent(id) // before the grant: the acquire's own
	k.add(id, lease, 2*time.Second)
	k.sent(id)
	k.answered(id, 2) // answers the early one
	if len(got) != 1 || got[0] != "extend invoke" {
		t.Fatalf("after an early answer: %q", got)
	}
	k.answered(id, 2)
	k.sent(id)
	k.sent(id) // resent while the answer is late
	k.answered(id, 2)
	k.answered(id, 2)
	k.sent(id)
	k.answered(id, 0) // the lease is gone
	k.sent(id)
	k.broken(errors.New("stream reset"))
	k.sent(id)
	k.remove(id)
	k.sent(id) // no longer watched
	want := []string{"extend invoke", "extend ok", "extend invoke", "extend ok", "extend invoke", "extend fail: lock not held: etcd has no lease 7",
		"extend invoke", "extend info: stream reset", "extend invoke", "extend info: no answer before the session stopped"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reported\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

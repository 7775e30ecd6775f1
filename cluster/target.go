package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/lockharness/lockharness/access"
)

// target is a deployment the harness did not start, such as a team's
// staging Redis (--target URL). Clients still reach it only through their
// own proxies, so client and link faults work; its node is not the
// harness's to pause, kill, restart or move the clock of (no NodeControl),
// and the harness sends it nothing of its own but PING and INFO. A client
// finds in it what it finds in single, so the same locks run on both.
var target = topology{
	name:    Target,
	shape:   Single,
	has:     []Capability{access.Primary, access.Independent},
	summary: "an existing deployment the harness did not start (--target redis://HOST:PORT or rediss://): client and link faults only",
	plan: func(s Spec) (plan, error) {
		if s.Target == "" && s.describing {
			return plan{nodes: []string{"n1"}}, nil
		}
		t, err := ParseTarget(s.Target)
		if err != nil {
			return plan{}, err
		}
		if s.Auth || s.TLS {
			return plan{}, errors.New("--auth and --tls secure the servers the harness starts; a --target brings its own (user:password@ and rediss:// in its URL)")
		}
		if s.Backend != BackendLocal {
			return plan{}, fmt.Errorf("--target runs no nodes, so no backend: drop --backend %s", s.Backend)
		}
		return plan{nodes: []string{"n1"}, target: t}, nil
	},
	start: func(ctx context.Context, c *Cluster) error {
		n := &externalNode{name: "n1", addr: c.planned.target.Addr}
		if err := c.Ping(n, 2*time.Second); err != nil {
			return fmt.Errorf("--target %s does not answer PING: %w", c.planned.target.Redacted(), err)
		}
		c.Nodes = append(c.Nodes, n)
		return nil
	},
	access: eachNode,
}

// Target is the deployment a target topology stands for, as parsed; nil
// for the topologies the harness starts.
func (c *Cluster) Target() *TargetURL { return c.planned.target }

// TargetPasswordEnv holds the --target's password when its URL has none,
// so that the password stays out of the recorded spec and the re-run
// command.
const TargetPasswordEnv = "LOCKHARNESS_TARGET_PASSWORD"

// TargetURL is a parsed --target.
type TargetURL struct {
	// Addr is a single server's address; empty for a Sentinel deployment.
	Addr string
	// Sentinels and Master are a Sentinel deployment's sentinels and the
	// name of the primary they watch (redis-sentinel://).
	Sentinels          []string
	Master             string
	Username, Password string
	TLS                bool
	// CAFile is the ?ca= PEM file to trust (rediss; empty: the system's).
	CAFile string
	url    *url.URL
}

// Redacted is the URL for messages and logs, with its password as xxxxx.
func (t *TargetURL) Redacted() string { return t.url.Redacted() }

// WithoutPassword is the URL with no password at all: what a recorded spec
// and its re-run command carry (the password then comes from
// TargetPasswordEnv).
func (t *TargetURL) WithoutPassword() string {
	u := *t.url
	if u.User != nil {
		if name := u.User.Username(); name != "" {
			u.User = url.User(name)
		} else {
			u.User = nil
		}
	}
	return u.String()
}

// ParseTarget parses redis://[USER:PASSWORD@]HOST:PORT or rediss://...
// [?ca=FILE], or a Sentinel deployment:
// redis-sentinel://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]/MASTER (the
// sentinels and the name of the primary they watch; the user logs in to
// the nodes and the sentinels alike). Cluster seed lists are refused with
// the reason.
func ParseTarget(raw string) (*TargetURL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// Not the URL itself: it may hold a password.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("--target is not a URL redis://[USER:PASSWORD@]HOST:PORT: %v", err)
	}
	if raw == "" {
		return nil, errors.New("topology target needs --target URL (redis://HOST:PORT, rediss:// for TLS)")
	}
	t := &TargetURL{url: u}
	switch u.Scheme {
	case "redis":
	case "rediss":
		t.TLS = true
	case "redis-sentinel":
		if err := t.parseSentinels(u); err != nil {
			return nil, err
		}
	case "redis-cluster":
		return nil, fmt.Errorf("--target %s: cluster deployments are not supported yet; the harness can put its proxies in front of one server (redis://HOST:PORT, rediss:// for TLS) or a Sentinel deployment (redis-sentinel://HOST:PORT,.../MASTER)", u.Redacted())
	default:
		return nil, fmt.Errorf("--target %s: scheme %q (valid: redis, rediss, redis-sentinel)", u.Redacted(), u.Scheme)
	}
	if t.Master == "" {
		if strings.Contains(u.Host, ",") {
			return nil, fmt.Errorf("--target %s: one server only; a Sentinel deployment's sentinels go in redis-sentinel://HOST:PORT,HOST:PORT/MASTER", u.Redacted())
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("--target %s: want HOST:PORT after the scheme", u.Redacted())
		}
		if u.Path != "" && u.Path != "/" && u.Path != "/0" {
			return nil, fmt.Errorf("--target %s: database %s: lock clients use database 0", u.Redacted(), strings.TrimPrefix(u.Path, "/"))
		}
		t.Addr = u.Host
	}
	if u.User != nil {
		t.Username = u.User.Username()
		t.Password, _ = u.User.Password()
	}
	if t.Password == "" {
		t.Password = os.Getenv(TargetPasswordEnv)
	}
	if t.Password != "" && t.Username == "" {
		t.Username = "default"
	}
	if ca := u.Query().Get("ca"); ca != "" {
		if !t.TLS {
			return nil, fmt.Errorf("--target %s: ?ca= goes with rediss://", u.Redacted())
		}
		if _, err := os.Stat(ca); err != nil {
			return nil, fmt.Errorf("--target %s: the CA file: %v", u.Redacted(), err)
		}
		t.CAFile = ca
	}
	return t, nil
}

// parseSentinels reads redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTER.
func (t *TargetURL) parseSentinels(u *url.URL) error {
	for _, hp := range strings.Split(u.Host, ",") {
		host, port, err := net.SplitHostPort(hp)
		if err != nil || host == "" || port == "" {
			return fmt.Errorf("--target %s: want the sentinels as HOST:PORT,HOST:PORT after the scheme, got %q", u.Redacted(), hp)
		}
		t.Sentinels = append(t.Sentinels, hp)
	}
	t.Master = strings.Trim(u.Path, "/")
	if t.Master == "" || strings.Contains(t.Master, "/") {
		return fmt.Errorf("--target %s: want the name of the primary the sentinels watch after them: redis-sentinel://HOST:PORT,.../MASTER", u.Redacted())
	}
	if u.RawQuery != "" {
		return fmt.Errorf("--target %s: a Sentinel target takes no options (TLS to Sentinel is not supported yet)", u.Redacted())
	}
	return nil
}

// security is how the harness and its clients log in to the target: both
// with the URL's user, over TLS for rediss.
func (t *TargetURL) security() (*security, error) {
	if t.Password == "" && !t.TLS {
		return nil, nil
	}
	s := &security{auth: t.Password != "", tls: t.TLS, adminUser: t.Username, adminPassword: t.Password,
		clientUser: t.Username, clientPassword: t.Password, caFile: t.CAFile}
	if t.TLS {
		host, _, _ := net.SplitHostPort(t.Addr)
		s.harnessTLS = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		if t.CAFile != "" {
			pem, err := os.ReadFile(t.CAFile)
			if err != nil {
				return nil, err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--target: no PEM certificate in %s", t.CAFile)
			}
			s.harnessTLS.RootCAs = pool
		}
	}
	return s, nil
}

// errNotOurs is what an external node says to a fault that would control it.
var errNotOurs = errors.New("the node belongs to a deployment the harness did not start (--target): it cannot pause, kill, restart it or move its clock")

// externalNode is the target's server: the harness only knows its address.
type externalNode struct{ name, addr string }

func (n *externalNode) Name() string                           { return n.name }
func (n *externalNode) Addr() string                           { return n.addr }
func (n *externalNode) Kill() error                            { return errNotOurs }
func (n *externalNode) Restart(context.Context) error          { return errNotOurs }
func (n *externalNode) LoseData() error                        { return errNotOurs }
func (n *externalNode) Pause() error                           { return errNotOurs }
func (n *externalNode) Resume() error                          { return errNotOurs }
func (n *externalNode) Paused() bool                           { return false }
func (n *externalNode) Stop() error                            { return nil } // not ours to stop
func (n *externalNode) Running() bool                          { return true }
func (n *externalNode) SetClockOffset(time.Duration) error     { return errNotOurs }
func (n *externalNode) ClockOffset() time.Duration             { return 0 }
func (n *externalNode) DriftClock(int64) (func() error, error) { return nil, errNotOurs }
func (n *externalNode) ShiftClock(time.Duration) error         { return errNotOurs }
func (n *externalNode) ClockDrift() int64                      { return 0 }

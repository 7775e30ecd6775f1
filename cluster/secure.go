package cluster

import (
	"bufio"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"github.com/lockharness/lockharness/access"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"
)

// ClientUser is the ACL user lock clients run as when Spec.Auth is set.
const ClientUser = "lockharness"

// clientCommands are what a lock client may run on a node: what the
// recipes and the libraries they adapt send (go-redis, redsync,
// bsm/redislock, rueidis/rueidislock), and nothing an operator would keep
// for themselves (no FLUSHALL, CONFIG, KEYS, REPLICAOF, DEBUG, ACL, ...).
var clientCommands = []string{
	// connection set-up: go-redis and rueidis send HELLO 3 AUTH, go-redis
	// falls back to AUTH; rueidis turns on client-side caching (the
	// rueidislock watch) with CLIENT TRACKING, and may opt in per read.
	"+hello", "+auth", "+ping", "+echo", "+select",
	"+client|tracking", "+client|caching", "+client|id", "+client|setname", "+client|getname",
	// a cluster client reads the slot map and follows ASK
	"+cluster|slots", "+cluster|shards", "+cluster|nodes", "+cluster|info", "+cluster|myid", "+asking", "+readonly", "+readwrite",
	// the recipes' own commands, and redislock's scripts (one lock may
	// span several keys: MSETNX, MGET, GETRANGE)
	"+get", "+set", "+setnx", "+del", "+exists", "+pexpire", "+pexpireat", "+expire",
	"+pttl", "+ttl", "+incr", "+wait", "+mget", "+mset", "+msetnx", "+getrange",
	// scripts: compare-and-delete, renewals, fenced grants, the libraries'
	"+eval", "+evalsha", "+eval_ro", "+evalsha_ro", "+script|load", "+script|exists",
	// rueidis reads a cached key's TTL in a transaction
	"+multi", "+exec", "+discard",
}

// sentinelClientCommands are what a lock client may ask a sentinel: where
// the primary is, who else watches it, and the announcements of a switch.
var sentinelClientCommands = []string{
	"+hello", "+auth", "+ping",
	"+sentinel|get-master-addr-by-name", "+sentinel|sentinels", "+sentinel|replicas", "+sentinel|master",
	"+subscribe", "+unsubscribe", "&+switch-master", "&+replica-reconf-done",
}

// Names of the PEM files in a run's TLS directory.
const (
	caFileName   = "ca.pem"
	certFileName = "server.pem"
	keyFileName  = "server-key.pem"
)

// security is how a run's servers are secured (Spec.Auth, Spec.TLS), made
// once per Start: fresh passwords and, for TLS, a fresh CA and server
// certificate. A nil *security is a plain run.
type security struct {
	auth, tls bool
	// adminPassword is the default user's (requirepass): the harness's own
	// path, replication (masterauth) and the sentinels' monitoring.
	// adminUser, when set, logs in as that user instead (a --target's).
	adminUser, adminPassword string
	// clientPassword is ClientUser's; clientUser, when set, replaces
	// ClientUser (a --target's own user).
	clientUser, clientPassword string
	// caFile, when set, is the CA to trust instead of the run's own.
	caFile string
	// keys are the ACL key patterns ClientUser may touch.
	keys []string
	// dir holds the PEM files.
	dir string
	// harnessTLS is the harness's own client configuration: it trusts the
	// run's CA and nothing else.
	harnessTLS *tls.Config
}

// newSecurity makes the run's secrets: nothing unless the spec asks for
// Auth or TLS; for TLS, the CA and server certificate under dir/tls.
func newSecurity(s Spec, dir string) (*security, error) {
	if !s.Auth && !s.TLS {
		return nil, nil
	}
	sec := &security{auth: s.Auth, tls: s.TLS, keys: s.LockKeys}
	if s.Auth {
		sec.adminPassword, sec.clientPassword = randomSecret(), randomSecret()
	}
	if s.TLS {
		abs, err := filepath.Abs(filepath.Join(dir, "tls"))
		if err != nil {
			return nil, err
		}
		sec.dir = abs
		pool, err := writeCertificates(abs)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		sec.harnessTLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	}
	return sec, nil
}

func randomSecret() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// writeCertificates writes a CA and a server certificate it signed (for
// 127.0.0.1 and localhost, valid for a day) as PEM files into dir, and
// returns a pool that trusts the CA.
func writeCertificates(dir string) (*x509.CertPool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	now := time.Now().Add(-time.Hour) // a skewed node clock still accepts it
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"lockharness"}, CommonName: "lockharness run CA"},
		NotBefore:             now,
		NotAfter:              now.Add(25 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	// One certificate for every server: nodes present it to clients, and
	// replicas and sentinels present it when they connect to a node (which
	// does not ask for it: tls-auth-clients no).
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"lockharness"}, CommonName: "127.0.0.1"},
		NotBefore:    now,
		NotAfter:     now.Add(25 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name, kind string
		der        []byte
		mode       os.FileMode
	}{
		{caFileName, "CERTIFICATE", caDER, 0o644},
		{certFileName, "CERTIFICATE", leafDER, 0o644},
		{keyFileName, "PRIVATE KEY", keyDER, 0o600},
	} {
		data := pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der})
		if err := os.WriteFile(filepath.Join(dir, f.name), data, f.mode); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// CAFile is the PEM file of the run's CA, empty without TLS.
func (s *security) CAFile() string {
	if s == nil || !s.tls {
		return ""
	}
	if s.caFile != "" || s.dir == "" {
		return s.caFile
	}
	return filepath.Join(s.dir, caFileName)
}

// tlsArgs are the TLS settings of a server listening on port, as pairs of
// name and value: TLS only, on port; replication and a sentinel's links
// over TLS as well; clients need no certificate of their own.
func (s *security) tlsArgs(port int) [][]string {
	if s == nil || !s.tls {
		return [][]string{{"port", strconv.Itoa(port)}}
	}
	return [][]string{
		{"port", "0"},
		{"tls-port", strconv.Itoa(port)},
		{"tls-cert-file", filepath.Join(s.dir, certFileName)},
		{"tls-key-file", filepath.Join(s.dir, keyFileName)},
		{"tls-ca-cert-file", filepath.Join(s.dir, caFileName)},
		{"tls-auth-clients", "no"},
		{"tls-replication", "yes"},
	}
}

// aclRule is ClientUser's ACL rule: its password (as a SHA-256, so the
// plain text is not in the server's arguments), its keys, and exactly the
// commands and channels given.
func (s *security) aclRule(commands []string, keys bool) []string {
	sum := sha256.Sum256([]byte(s.clientPassword))
	rule := []string{ClientUser, "reset", "on", "#" + hex.EncodeToString(sum[:])}
	if keys {
		if len(s.keys) == 0 {
			rule = append(rule, "allkeys")
		}
		for _, k := range s.keys {
			rule = append(rule, "~"+configSafe(k))
		}
	}
	return append(rule, commands...)
}

// configSafe makes a key pattern fit a configuration line, where an ACL
// rule ends at white space even when quoted: each white-space character
// becomes ?, which matches it (and any other one character).
func configSafe(pattern string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '?'
		}
		return r
	}, pattern)
}

// serverArgs are a redis-server's security arguments: TLS on its port, and
// with Auth the default user's password (the harness's and the
// replication's), the client user, and the password a replica gives its
// primary: every node has it, since any of them may become a replica.
func (s *security) serverArgs(port int) []string {
	var a []string
	for _, kv := range s.tlsArgs(port) {
		a = append(a, "--"+kv[0], kv[1])
	}
	if s != nil && s.auth {
		a = append(a, "--requirepass", s.adminPassword, "--masterauth", s.adminPassword)
		a = append(append(a, "--user"), s.aclRule(clientCommands, true)...)
	}
	return a
}

// sentinelAuth are a sentinel's Auth lines for monitoring master (after
// its monitor line): the password it gives the nodes and the other
// sentinels, its own (the default user's, which the other sentinels and
// the harness use), and the client user, who may only ask where the
// primary is and hear of a switch. A sentinel's TLS is in tlsArgs.
func (s *security) sentinelAuth(master string) []string {
	if s == nil || !s.auth {
		return nil
	}
	return []string{
		"requirepass " + s.adminPassword,
		fmt.Sprintf("sentinel auth-pass %s %s", master, s.adminPassword),
		"sentinel sentinel-pass " + s.adminPassword,
		"user " + strings.Join(s.aclRule(sentinelClientCommands, false), " "),
	}
}

// options are the harness's own client options for a node or sentinel at
// addr: the default user with the admin password, over TLS when the run
// has it.
func (s *security) options(addr string) *redis.Options {
	o := &redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: time.Second, ContextTimeoutEnabled: true, Protocol: 2, DisableIdentity: true}
	if s != nil {
		o.Username, o.Password = s.adminUser, s.adminPassword
		if s.tls {
			o.TLSConfig = s.harnessTLS.Clone()
		}
	}
	return o
}

// ping sends PING (after AUTH, with Auth) to addr and wants +PONG back; a
// LOADING reply is not ready, and a refused AUTH is an error.
func (s *security) ping(addr string, timeout time.Duration) error {
	d := &net.Dialer{Timeout: timeout}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var c net.Conn
	var err error
	if s != nil && s.tls {
		c, err = (&tls.Dialer{NetDialer: d, Config: s.harnessTLS}).DialContext(ctx, "tcp", addr)
	} else {
		c, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	var req strings.Builder
	switch {
	case s != nil && s.auth && s.adminUser != "":
		req.WriteString(resp("AUTH", s.adminUser, s.adminPassword))
	case s != nil && s.auth:
		req.WriteString(resp("AUTH", s.adminPassword))
	}
	req.WriteString(resp("PING"))
	if _, err := c.Write([]byte(req.String())); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	if s != nil && s.auth {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if line = strings.TrimSpace(line); line != "+OK" {
			return fmt.Errorf("AUTH answered %q", line)
		}
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// resp encodes a command as a RESP array of bulk strings.
func resp(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// clientAccess fills in what a lock client needs to pass the run's
// security: ClientUser and its password, and the CA to trust.
func (s *security) clientAccess(a access.Access) access.Access {
	if s == nil {
		return a
	}
	if s.auth {
		a.Username, a.Password = cmp.Or(s.clientUser, ClientUser), s.clientPassword
	}
	a.TLS, a.CAFile = s.tls, s.CAFile()
	if s.tls {
		a.ServerName = s.harnessTLS.ServerName
	}
	return a
}

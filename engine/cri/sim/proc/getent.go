package proc

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	"mvdan.cc/sh/v3/interp"
)

// getentUsage is Alpine's getent's (musl-utils) usage.
const getentUsage = "Usage: getent database [key ...]\n\tdatabase may be one of:\n" +
	"\t\tethers group hosts ahosts ahostsv4 ahostsv6 networks\n\t\tpasswd protocols services shadow shells\n"

// getentDatabases are the databases getent knows; a simulated image has
// no entries in any but hosts.
var getentDatabases = map[string]bool{"ethers": true, "group": true, "hosts": true, "ahosts": true, "ahostsv4": true,
	"ahostsv6": true, "networks": true, "passwd": true, "protocols": true, "services": true, "shadow": true, "shells": true}

// getent is Alpine's (musl-utils): `getent hosts KEY...` looks each key up
// as musl does (an address by its name in /etc/hosts or DNS PTR, a name by
// /etc/hosts then DNS, IPv6 before IPv4, with musl's search rules) and
// prints its first address, its canonical name and its aliases. The first
// key not found ends it with status 2.
func (c *commands) getent(ctx context.Context, hc interp.HandlerContext, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(hc.Stderr, getentUsage)
		return interp.ExitStatus(1)
	}
	if !getentDatabases[args[0]] {
		fmt.Fprintf(hc.Stderr, "getent: Unknown database `%s': No error information\n%s", args[0], getentUsage)
		return interp.ExitStatus(1)
	}
	if args[0] != "hosts" {
		if len(args) > 1 {
			return interp.ExitStatus(2)
		}
		return nil
	}
	r := musl{c: c, conf: readResolvConf(c.p.FS)}
	for _, key := range args[1:] {
		addr, name, aliases, ok := r.host(ctx, key)
		if !ok {
			return interp.ExitStatus(2)
		}
		// The aliases after two spaces, then one between them.
		fmt.Fprintf(hc.Stdout, "%-16s  %s  %s\n", addr, name, strings.Join(aliases, " "))
	}
	return nil
}

// musl resolves names as musl libc does, for a container's process.
type musl struct {
	c    *commands
	conf resolvConf
}

// family is an address family of musl's lookups.
type family int

const (
	inet family = iota
	inet6
)

// host is gethostbyaddr for an address, else gethostbyname2 for IPv6 and
// then IPv4: the first address, the name and the aliases getent prints.
func (r musl) host(ctx context.Context, key string) (addr, name string, aliases []string, ok bool) {
	if ip := net.ParseIP(key); ip != nil {
		name := r.addrName(ctx, ip)
		return ip.String(), name, []string{name}, true
	}
	for _, f := range []family{inet6, inet} {
		addrs, canon := r.lookup(ctx, key, f)
		if len(addrs) == 0 {
			continue
		}
		aliases := []string{canon}
		if canon != key {
			aliases = append(aliases, key)
		}
		return addrs[0].String(), canon, aliases, true
	}
	return "", "", nil, false
}

// lookup is musl's __lookup_name for a name: /etc/hosts, then DNS with
// the search domains; it returns the addresses and the canonical name.
func (r musl) lookup(ctx context.Context, name string, f family) ([]net.IP, string) {
	addrs, canon, found := r.fromHosts(name, f)
	if found {
		return addrs, canon
	}
	dots := strings.Count(name, ".")
	search := r.conf.search
	if dots >= r.conf.ndots || strings.HasSuffix(name, ".") {
		search = nil
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" || strings.HasSuffix(name, ".") {
		return nil, ""
	}
	for _, d := range search {
		if addrs, canon, done := r.fromDNS(ctx, name+"."+d, f); done {
			return addrs, canon
		}
	}
	addrs, canon, _ = r.fromDNS(ctx, name, f)
	return addrs, canon
}

// fromHosts is musl's name_from_hosts: the addresses of family on the
// lines of /etc/hosts that name name, and the first such line's first
// name. found is false when no line names it, so DNS is asked.
func (r musl) fromHosts(name string, f family) (addrs []net.IP, canon string, found bool) {
	b, err := r.c.p.FS.ReadFile("/etc/hosts")
	if err != nil {
		return nil, "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) < 2 || !slices.Contains(fields[1:], name) {
			continue
		}
		found = true
		if ip := net.ParseIP(fields[0]); ip != nil && (ip.To4() != nil) == (f == inet) {
			addrs = append(addrs, ip)
		}
		if canon == "" {
			canon = fields[1]
		}
	}
	return addrs, canon, found
}

// fromDNS is musl's name_from_dns: the A or AAAA query for name, to each
// nameserver in turn until one answers. done is false only for NXDOMAIN,
// which lets the search go on to the next domain; an empty answer, a
// failure or no answer at all end it.
func (r musl) fromDNS(ctx context.Context, name string, f family) (addrs []net.IP, canon string, done bool) {
	qtype := dns.TypeA
	if f == inet6 {
		qtype = dns.TypeAAAA
	}
	reply := r.query(ctx, name, qtype)
	switch {
	case reply == nil || reply.Rcode == dns.RcodeServerFailure:
		return nil, "", true
	case reply.Rcode == dns.RcodeNameError:
		return nil, "", false
	case reply.Rcode != dns.RcodeSuccess:
		return nil, "", true
	}
	canon = name
	for _, rr := range reply.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			addrs = append(addrs, rr.A)
		case *dns.AAAA:
			addrs = append(addrs, rr.AAAA)
		case *dns.CNAME:
			canon = strings.TrimSuffix(rr.Target, ".")
		}
	}
	return addrs, canon, true
}

// addrName is musl's getnameinfo for an address: its name in
// /etc/hosts, else its PTR record, else the address itself.
func (r musl) addrName(ctx context.Context, ip net.IP) string {
	if b, err := r.c.p.FS.ReadFile("/etc/hosts"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			line, _, _ = strings.Cut(line, "#")
			if f := strings.Fields(line); len(f) >= 2 && ip.Equal(net.ParseIP(f[0])) {
				return f[1]
			}
		}
	}
	if ptr, err := dns.ReverseAddr(ip.String()); err == nil {
		if reply := r.query(ctx, strings.TrimSuffix(ptr, "."), dns.TypePTR); reply != nil {
			for _, rr := range reply.Answer {
				if p, ok := rr.(*dns.PTR); ok {
					return strings.TrimSuffix(p.Ptr, ".")
				}
			}
		}
	}
	return ip.String()
}

// query asks the first three nameservers, in turn, and returns the first
// reply, or nil after musl's timeout (5 s) when none comes.
func (r musl) query(ctx context.Context, name string, qtype uint16) *dns.Msg {
	const timeout = 5 * time.Second
	deadline := time.Now().Add(timeout)
	unreachable := true
	for _, s := range r.conf.servers[:min(3, len(r.conf.servers))] {
		if net.ParseIP(s) == nil {
			continue
		}
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		reply, err := exchange(ctx, net.JoinHostPort(s, "53"), m, time.Until(deadline))
		if err == nil && reply != nil {
			return reply
		}
		unreachable = unreachable && isDialError(err)
	}
	if unreachable {
		// musl does not hear that a server is unreachable: it waits for
		// an answer until its timeout.
		_ = r.c.p.Sleep(ctx, timeout)
	}
	return nil
}

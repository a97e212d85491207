package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"mvdan.cc/sh/v3/interp"

	"github.com/podtrace/podtrace/engine/podnet"
)

// exchange sends query m to the DNS server at addr (IP:port) over UDP
// and returns its reply: the simulated resolvers' only way out of a
// container. Only in podtrace's pod network namespace, where every
// address is podtrace's own (the cluster's DNS server among them) and
// nothing routes off the machine, does a query leave the process;
// elsewhere the network is unreachable, as it is for a pod there.
var exchange = func(ctx context.Context, addr string, m *dns.Msg, timeout time.Duration) (*dns.Msg, error) {
	if !podnet.Inside() {
		return nil, &net.OpError{Op: "dial", Net: "udp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
	}
	r, _, err := (&dns.Client{Net: "udp", Timeout: timeout}).ExchangeContext(ctx, m, addr)
	return r, err
}

// resolvConf is what a container's /etc/resolv.conf says, as busybox's
// nslookup and musl read it.
type resolvConf struct {
	servers []string // every nameserver line (musl uses the first three)
	// search is the last search or domain line's (musl's); nslookup
	// prefers a search line to a domain line wherever they are.
	search, nslookupSearch []string
	ndots                  int
}

// ResolvConf returns the nameservers and the search domains of the
// container's /etc/resolv.conf, as musl reads them (127.0.0.1 without
// one).
func (f *FS) ResolvConf() (servers, search []string) {
	rc := readResolvConf(f)
	return rc.servers, rc.search
}

// readResolvConf reads the container's /etc/resolv.conf; without one,
// the resolvers ask 127.0.0.1.
func readResolvConf(fsys *FS) resolvConf {
	rc := resolvConf{ndots: 1}
	b, _ := fsys.ReadFile("/etc/resolv.conf")
	var domain []string
	haveSearch := false
	s := bufio.NewScanner(strings.NewReader(string(b)))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			rc.servers = append(rc.servers, f[1])
		case "search":
			rc.search, rc.nslookupSearch, haveSearch = f[1:], f[1:], true
		case "domain":
			rc.search, domain = f[1:2], f[1:2]
		case "options":
			for _, o := range f[1:] {
				if n, err := strconv.Atoi(strings.TrimPrefix(o, "ndots:")); err == nil && strings.HasPrefix(o, "ndots:") {
					rc.ndots = min(n, 15)
				}
			}
		}
	}
	if !haveSearch {
		rc.nslookupSearch = domain
	}
	if len(rc.servers) == 0 {
		rc.servers = []string{"127.0.0.1"}
	}
	return rc
}

// rcodes are the reply codes as nslookup names them.
var rcodes = []string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET",
	"NXRRSET", "NOTAUTH", "NOTZONE", "11", "12", "13", "14", "15"}

// nslookupTypes are the query types nslookup's -type= takes, in the order
// it asks them.
var nslookupTypes = []uint16{dns.TypeSOA, dns.TypeNS, dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeMX,
	dns.TypeTXT, dns.TypeSRV, dns.TypePTR, dns.TypeANY}

const nslookupUsage = "Usage: nslookup [-type=QUERY_TYPE] [-debug] HOST [DNS_SERVER]\n\nQuery DNS about HOST\n\n" +
	"QUERY_TYPE: soa,ns,a,aaaa,cname,mx,txt,ptr,srv,any\n"

// nslookup is busybox's (1.36, its own resolver): it asks each server of
// /etc/resolv.conf in turn (or the one given) for HOST's A and AAAA
// records, or PTR for an address, with every search domain appended when
// HOST has no dot and none without, and prints every reply.
func (c *commands) nslookup(ctx context.Context, hc interp.HandlerContext, args []string) error {
	out := hc.Stdout
	port, timeout := 53, 5*time.Second
	var types []uint16
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name, val, _ := strings.Cut(args[0][1:], "=")
		args = args[1:]
		switch name {
		case "type", "querytype":
			i := slices.IndexFunc(nslookupTypes, func(t uint16) bool { return strings.EqualFold(dns.TypeToString[t], val) })
			if i < 0 {
				fmt.Fprintf(hc.Stderr, "nslookup: invalid query type \"%s\"\n", val)
				return interp.ExitStatus(1)
			}
			if !slices.Contains(types, nslookupTypes[i]) {
				types = append(types, nslookupTypes[i])
			}
		case "port", "timeout", "t", "retry":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				fmt.Fprintf(hc.Stderr, "nslookup: invalid number '%s'\n", val)
				return interp.ExitStatus(1)
			}
			switch name {
			case "port":
				port = n
			case "timeout", "t":
				timeout = time.Duration(n) * time.Second
			}
		case "debug":
		default:
			args = nil
		}
	}
	if len(args) == 0 || len(args) > 2 {
		fmt.Fprint(hc.Stderr, nslookupUsage)
		return interp.ExitStatus(1)
	}
	var servers, search []string
	if len(args) == 2 {
		servers = args[1:]
	} else {
		rc := readResolvConf(c.p.FS)
		servers, search = rc.servers, rc.nslookupSearch
	}
	// Asked in the order of nslookup's table of types, whatever the order given.
	slices.SortFunc(types, func(a, b uint16) int {
		return slices.Index(nslookupTypes, a) - slices.Index(nslookupTypes, b)
	})
	queries := nslookupQueries(args[0], types, search)
	for _, server := range servers {
		ip := net.ParseIP(server)
		if ip == nil {
			fmt.Fprintf(hc.Stderr, "nslookup: bad address '%s'\n", server)
			return interp.ExitStatus(1)
		}
		addr := net.JoinHostPort(server, strconv.Itoa(port))
		replies, code, err := c.nslookupServer(ctx, out, server, addr, queries, timeout)
		if err != nil {
			fmt.Fprintf(hc.Stderr, "nslookup: can't connect to remote host (%s): %s\n", ip, errnoText(err))
			return interp.ExitStatus(1)
		}
		if replies > 0 {
			return exitStatus(code)
		}
	}
	fmt.Fprint(out, ";; connection timed out; no servers could be reached\n\n")
	return interp.ExitStatus(1)
}

// nslookupServer asks one server every query and prints each reply as
// nslookup does; it returns how many came back and the exit status, or
// the error that kept the query from being sent.
func (c *commands) nslookupServer(ctx context.Context, out io.Writer, name, addr string, queries []dns.Question, timeout time.Duration) (int, int, error) {
	deadline := time.Now().Add(timeout)
	replies, code := 0, 0
	var unanswered []string
	for _, q := range queries {
		m := new(dns.Msg)
		m.SetQuestion(q.Name, q.Qtype)
		r, err := exchange(ctx, addr, m, time.Until(deadline))
		if isDialError(err) {
			return 0, 1, err
		}
		if err != nil || r == nil {
			unanswered = append(unanswered, strings.TrimSuffix(q.Name, "."))
			continue
		}
		if replies == 0 {
			fmt.Fprintf(out, "Server:\t\t%s\nAddress:\t%s\n\n", name, addr)
		}
		replies++
		if r.Rcode != dns.RcodeSuccess {
			fmt.Fprintf(out, "** server can't find %s: %s\n", strings.TrimSuffix(q.Name, "."), rcodes[r.Rcode&15])
			code = 1
		} else {
			printAnswers(out, r)
		}
		fmt.Fprintln(out)
	}
	if replies == 0 {
		return 0, 1, nil
	}
	for _, n := range unanswered {
		fmt.Fprintf(out, "*** Can't find %s: No answer\n", n)
	}
	if len(unanswered) > 0 {
		fmt.Fprintln(out)
	}
	return replies, code, nil
}

// nslookupQueries are the questions nslookup asks for host: PTR for an
// address, else each type (A and AAAA by default) for host, or for
// host.DOMAIN with each search domain when host has no dot.
func nslookupQueries(host string, types []uint16, search []string) []dns.Question {
	if len(types) == 0 {
		if ptr, err := dns.ReverseAddr(host); err == nil {
			return []dns.Question{{Name: ptr, Qtype: dns.TypePTR, Qclass: dns.ClassINET}}
		}
		types = []uint16{dns.TypeA, dns.TypeAAAA}
	}
	names := []string{host}
	if len(search) > 0 && !strings.Contains(host, ".") {
		names = names[:0]
		for _, d := range search {
			names = append(names, host+"."+d)
		}
	}
	var qs []dns.Question
	for _, t := range types {
		for _, n := range names {
			qs = append(qs, dns.Question{Name: dns.Fqdn(n), Qtype: t, Qclass: dns.ClassINET})
		}
	}
	return qs
}

// printAnswers prints a reply's answers as nslookup does.
func printAnswers(w io.Writer, r *dns.Msg) {
	if !r.Authoritative {
		fmt.Fprintln(w, "Non-authoritative answer:")
	}
	for _, rr := range r.Answer {
		name := strings.TrimSuffix(rr.Header().Name, ".")
		switch rr := rr.(type) {
		case *dns.A:
			fmt.Fprintf(w, "Name:\t%s\nAddress: %s\n", name, rr.A)
		case *dns.AAAA:
			fmt.Fprintf(w, "Name:\t%s\nAddress: %s\n", name, rr.AAAA)
		case *dns.NS:
			fmt.Fprintf(w, "%s\tnameserver = %s\n", name, strings.TrimSuffix(rr.Ns, "."))
		case *dns.CNAME:
			fmt.Fprintf(w, "%s\tcanonical name = %s\n", name, strings.TrimSuffix(rr.Target, "."))
		case *dns.PTR:
			fmt.Fprintf(w, "%s\tname = %s\n", name, strings.TrimSuffix(rr.Ptr, "."))
		case *dns.MX:
			fmt.Fprintf(w, "%s\tmail exchanger = %d %s\n", name, rr.Preference, strings.TrimSuffix(rr.Mx, "."))
		case *dns.TXT:
			if len(rr.Txt) > 0 && rr.Txt[0] != "" {
				fmt.Fprintf(w, "%s\ttext = \"%s\"\n", name, rr.Txt[0])
			}
		case *dns.SRV:
			fmt.Fprintf(w, "%s\tservice = %d %d %d %s\n", name, rr.Priority, rr.Weight, rr.Port, strings.TrimSuffix(rr.Target, "."))
		case *dns.SOA:
			fmt.Fprintf(w, "%s\n\torigin = %s\n\tmail addr = %s\n\tserial = %d\n\trefresh = %d\n\tretry = %d\n\texpire = %d\n\tminimum = %d\n",
				name, strings.TrimSuffix(rr.Ns, "."), strings.TrimSuffix(rr.Mbox, "."), rr.Serial, rr.Refresh, rr.Retry, rr.Expire, rr.Minttl)
		}
	}
}

// isDialError reports whether err kept a query from being sent at all
// (no route to the server), rather than from being answered.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// errnoText is an error's system error as C's strerror words it.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return err.Error()
}

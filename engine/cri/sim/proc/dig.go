package proc

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"mvdan.cc/sh/v3/interp"
)

// digOptions are the options of BIND 9's dig that the simulation reads:
// +[no]tcp, +[no]search, +short, +[no]all and the sections' +[no]answer,
// +[no]question, +[no]authority, +[no]additional, +time=T, +tries=N,
// @SERVER, -t TYPE, -x ADDR, -p PORT; a NAME, a TYPE and the class IN.
// Other +options are accepted and ignored.
type digOptions struct {
	tcp, search, short bool
	sections           map[string]bool // answer, question, ...; nil: the whole reply
	timeout            time.Duration
	tries              int
	server, port       string
	name               string
	qtype              uint16
}

// parseDig reads dig's arguments; it returns what to print on stderr and
// exit 1 with, if they are wrong.
func parseDig(args []string) (o digOptions, fault string) {
	o = digOptions{timeout: 5 * time.Second, tries: 3, port: "53", qtype: dns.TypeA}
	typed := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case strings.HasPrefix(a, "+"):
			name, val, _ := strings.Cut(a[1:], "=")
			on := !strings.HasPrefix(name, "no")
			name = strings.TrimPrefix(name, "no")
			switch name {
			case "tcp", "vc":
				o.tcp = on
			case "search":
				o.search = on
			case "short":
				o.short = on
			case "all":
				o.sections = map[string]bool{"all": on}
			case "answer", "question", "authority", "additional":
				if o.sections == nil {
					o.sections = map[string]bool{"all": true}
				}
				o.sections[name] = on
			case "time", "tries", "retry":
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 {
					return o, fmt.Sprintf("Invalid option: +%s\n", a[1:])
				}
				switch name {
				case "time":
					o.timeout = time.Duration(max(n, 1)) * time.Second
				case "tries":
					o.tries = max(n, 1)
				default:
					o.tries = n + 1
				}
			}
		case strings.HasPrefix(a, "@"):
			o.server = a[1:]
		case a == "-t":
			t, ok := dns.StringToType[strings.ToUpper(next())]
			if !ok {
				return o, fmt.Sprintf("invalid type: %s\n", args[i])
			}
			o.qtype, typed = t, true
		case a == "-x":
			ptr, err := dns.ReverseAddr(next())
			if err != nil {
				return o, fmt.Sprintf("Invalid IP address %s\n", args[i])
			}
			o.name, o.qtype, typed = ptr, dns.TypePTR, true
		case a == "-p":
			o.port = next()
		case strings.HasPrefix(a, "-"): // -4, -6, -q NAME...: ignored
		case strings.EqualFold(a, "IN"):
		default:
			if t, ok := dns.StringToType[strings.ToUpper(a)]; ok && o.name != "" && !typed {
				o.qtype, typed = t, true
			} else {
				o.name = a
			}
		}
	}
	if o.name == "" {
		o.name, o.qtype = ".", dns.TypeNS
	}
	return o, ""
}

// dig is BIND 9's dig: it asks the container's resolver (the first
// nameserver of /etc/resolv.conf, or @SERVER) for NAME's records, over
// UDP or TCP, and prints the reply: whole, its chosen sections (+noall
// +answer: one line per record) or its records' data (+short). With
// +search a name with fewer dots than ndots is tried with each search
// domain until one has an answer. It exits 9 when no server answered, 0
// otherwise, NXDOMAIN included.
func (c *commands) dig(ctx context.Context, hc interp.HandlerContext, args []string) error {
	o, fault := parseDig(args)
	if fault != "" {
		fmt.Fprint(hc.Stderr, fault)
		return interp.ExitStatus(1)
	}
	rc := readResolvConf(c.p.FS)
	server := o.server
	if server == "" {
		server = rc.servers[0]
	}
	if net.ParseIP(server) == nil {
		if ip := c.resolve(ctx, server); ip != nil {
			server = ip.String()
		}
	}
	addr := net.JoinHostPort(server, o.port)
	var r *dns.Msg
	var err error
	for _, name := range digNames(o, rc) {
		m := new(dns.Msg)
		m.SetQuestion(name, o.qtype)
		m.SetEdns0(1232, false)
		for try := 0; try < o.tries; try++ {
			if r, err = c.digExchange(ctx, o.tcp, addr, m, o.timeout); err == nil || isDialError(err) {
				break
			}
		}
		if err != nil || (r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0) {
			break
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintln(hc.Stdout, ";; connection timed out; no servers could be reached")
		return interp.ExitStatus(9)
	}
	printDig(hc.Stdout, o, r, server)
	return nil
}

// digNames are the names dig asks in turn: with +search, a name with
// fewer dots than ndots (and no final dot) with each search domain first.
func digNames(o digOptions, rc resolvConf) []string {
	name := o.name
	if !o.search || strings.HasSuffix(name, ".") || strings.Count(name, ".") >= rc.ndots {
		return []string{dns.Fqdn(name)}
	}
	var names []string
	for _, d := range rc.search {
		names = append(names, dns.Fqdn(name+"."+d))
	}
	return append(names, dns.Fqdn(name))
}

// digExchange sends m over UDP (as nslookup does) or over a TCP
// connection from the pod network namespace.
func (c *commands) digExchange(ctx context.Context, tcp bool, addr string, m *dns.Msg, timeout time.Duration) (*dns.Msg, error) {
	if !tcp {
		return exchange(ctx, addr, m, timeout)
	}
	conn, err := c.p.Dial(ctx, "tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	co := &dns.Conn{Conn: conn}
	if err := co.WriteMsg(m); err != nil {
		return nil, err
	}
	return co.ReadMsg()
}

// printDig prints r as dig does with o's display options.
func printDig(w io.Writer, o digOptions, r *dns.Msg, server string) {
	switch {
	case o.short:
		for _, rr := range r.Answer {
			fmt.Fprintln(w, strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
	case o.sections != nil:
		show := func(name string) bool {
			v, ok := o.sections[name]
			return v || (!ok && o.sections["all"])
		}
		if show("question") {
			for _, q := range r.Question {
				fmt.Fprintf(w, ";%s\n", strings.TrimPrefix(q.String(), ";"))
			}
		}
		for _, s := range []struct {
			name string
			rrs  []dns.RR
		}{{"answer", r.Answer}, {"authority", r.Ns}, {"additional", r.Extra}} {
			if show(s.name) {
				for _, rr := range s.rrs {
					if rr.Header().Rrtype != dns.TypeOPT {
						fmt.Fprintln(w, rr.String())
					}
				}
			}
		}
	default:
		fmt.Fprintf(w, "\n; <<>> DiG 9.18.33-1~deb12u2-Debian <<>> %s %s\n;; global options: +cmd\n;; Got answer:\n",
			strings.TrimSuffix(o.name, "."), dns.TypeToString[o.qtype])
		fmt.Fprintln(w, r.String())
		fmt.Fprintf(w, ";; SERVER: %s#%s(%s) (%s)\n;; MSG SIZE  rcvd: %d\n\n", server, o.port, server, map[bool]string{true: "TCP", false: "UDP"}[o.tcp], r.Len())
	}
}

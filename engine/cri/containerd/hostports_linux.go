package containerd

import (
	"bytes"
	"strings"

	utiliptables "k8s.io/kubernetes/pkg/util/iptables"
	"mvdan.cc/sh/v3/shell"
)

// hostPortChain prefixes the nat chains the portmap plugin shares among
// every pod's hostPorts on a machine (CNI-HOSTPORT-DNAT, -MASQ, -SETMARK)
// and jumps to from PREROUTING, OUTPUT and POSTROUTING.
const hostPortChain = "CNI-HOSTPORT-"

// removeHostPortChains removes portmap's shared chains, and the rules that
// jump to them, once no pod's hostPort is left in them: after the last
// node has stopped, the machine's nat table is as before podtrace. A pod
// of another runtime on this machine with a hostPort keeps them (its
// DNAT chain is listed in CNI-HOSTPORT-DNAT); portmap makes them again
// for the next pod that needs them.
func removeHostPortChains() error {
	ipt := utiliptables.New(utiliptables.ProtocolIPv4)
	var saved bytes.Buffer
	if err := ipt.SaveInto(utiliptables.TableNAT, &saved); err != nil {
		return nil // no iptables here: portmap made nothing
	}
	var jumps [][]string
	for _, line := range strings.Split(saved.String(), "\n") {
		if strings.HasPrefix(line, "-A "+hostPortChain+"DNAT ") {
			return nil // a hostPort is still served
		}
		if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, "-j "+hostPortChain) {
			continue
		}
		if args, err := shell.Fields(line, nil); err == nil && !strings.HasPrefix(args[1], hostPortChain) {
			jumps = append(jumps, args[1:])
		}
	}
	for _, j := range jumps {
		if err := ipt.DeleteRule(utiliptables.TableNAT, utiliptables.Chain(j[0]), j[1:]...); err != nil {
			return err
		}
	}
	for _, c := range []string{"DNAT", "MASQ", "SETMARK"} {
		chain := utiliptables.Chain(hostPortChain + c)
		if ok, _ := ipt.ChainExists(utiliptables.TableNAT, chain); !ok {
			continue
		}
		if err := ipt.FlushChain(utiliptables.TableNAT, chain); err != nil {
			return err
		}
		if err := ipt.DeleteChain(utiliptables.TableNAT, chain); err != nil {
			return err
		}
	}
	return nil
}

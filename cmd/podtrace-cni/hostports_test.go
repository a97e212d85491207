package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A node serves hostPorts on its own address and loopback only: a hostPort
// without a hostIP goes to the gateway, never to every address of the
// machine, and one on an address that is not the node's is left out.
func TestHostPortsStayOnTheNodesAddresses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []portMapping
		want []portMapping
	}{
		{"none", nil, nil},
		{"no hostIP: the node's address",
			[]portMapping{{HostPort: 8080, ContainerPort: 80, Protocol: "tcp"}},
			[]portMapping{{HostPort: 8080, ContainerPort: 80, Protocol: "tcp", HostIP: "10.244.1.1"}}},
		{"loopback and the node's address kept",
			[]portMapping{{HostPort: 1, ContainerPort: 1, Protocol: "tcp", HostIP: "127.0.0.1"},
				{HostPort: 2, ContainerPort: 2, Protocol: "udp", HostIP: "10.244.1.1"}},
			[]portMapping{{HostPort: 1, ContainerPort: 1, Protocol: "tcp", HostIP: "127.0.0.1"},
				{HostPort: 2, ContainerPort: 2, Protocol: "udp", HostIP: "10.244.1.1"}}},
		{"0.0.0.0: the node's address",
			[]portMapping{{HostPort: 4, ContainerPort: 4, Protocol: "tcp", HostIP: "0.0.0.0"}},
			[]portMapping{{HostPort: 4, ContainerPort: 4, Protocol: "tcp", HostIP: "10.244.1.1"}}},
		{"another address is not the node's",
			[]portMapping{{HostPort: 3, ContainerPort: 3, Protocol: "tcp", HostIP: "192.168.1.20"}},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &conf{Gateway: "10.244.1.1"}
			c.RuntimeConfig.PortMappings = tt.in
			if got := hostPorts(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("hostPorts(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// containerd hands the hostPorts over in runtimeConfig, as it does to any
// plugin with the portMappings capability, and portmap gets them with the
// bridge's result.
func TestPortMapConfigurationFromContainerd(t *testing.T) {
	t.Parallel()
	stdin := []byte(`{"cniVersion":"1.0.0","name":"podtrace","type":"podtrace-cni","gateway":"10.244.1.1",
		"delegate":{"type":"bridge"},
		"runtimeConfig":{"portMappings":[{"hostPort":54323,"containerPort":8080,"protocol":"tcp"}]}}`)
	c, _, err := load(stdin)
	if err != nil {
		t.Fatal(err)
	}
	b, err := portMapConf(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	ports := got["runtimeConfig"].(map[string]any)["portMappings"].([]any)
	if got["type"] != "portmap" || len(ports) != 1 || ports[0].(map[string]any)["hostIP"] != "10.244.1.1" {
		t.Errorf("portmap configuration %s", b)
	}
}

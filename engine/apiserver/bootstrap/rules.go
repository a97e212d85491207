package bootstrap

import rbacv1 "k8s.io/api/rbac/v1"

// The rule lists below are upstream's (bootstrappolicy/policy.go and
// controller_policy.go, Kubernetes 1.36.3) with the feature gates at their
// 1.36 defaults: DynamicResourceAllocation, DRAExtendedResource and
// DRAResourceClaimGranularStatusAuthorization and
// KubeletServiceAccountTokenForCredentialProviders on; GenericWorkload,
// ClusterTrustBundle, PodCertificateRequest, DRADeviceTaintRules and
// KubeletFineGrainedAuthz off. testdata/upstream holds upstream's golden
// files, which the tests compare against.

func eventsRule() rbacv1.PolicyRule {
	return newRule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").build()
}

func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule(read...).groups(legacyGroup).resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps").build(),
		newRule(read...).groups(legacyGroup).resources("limitranges", "resourcequotas", "bindings",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log").build(),
		// Reading namespaces in a namespace means reading *this* namespace.
		newRule(read...).groups(legacyGroup).resources("namespaces").build(),
		newRule(read...).groups(legacyGroup, eventsGroup).resources("events").build(),
		newRule(read...).groups(discoveryGroup).resources("endpointslices").build(),
		newRule(read...).groups(appsGroup).resources(
			"controllerrevisions",
			"statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status",
			"deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale").build(),
		newRule(read...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").build(),
		newRule(read...).groups(batchGroup).resources("jobs", "cronjobs", "cronjobs/status", "jobs/status").build(),
		newRule(read...).groups(extensionsGroup).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
			"networkpolicies").build(),
		newRule(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status").build(),
		newRule(read...).groups(networkingGroup).resources("networkpolicies", "ingresses", "ingresses/status").build(),
		newRule(read...).groups(resourceGroup).resources("resourceclaims", "resourceclaims/status", "resourceclaimtemplates").build(),
	}
}

func editRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Read on escalating resources.
		newRule(read...).groups(legacyGroup).resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy").build(),
		newRule("impersonate").groups(legacyGroup).resources("serviceaccounts").build(),
		newRule(write...).groups(legacyGroup).resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward").build(),
		newRule("create").groups(legacyGroup).resources("pods/eviction").build(),
		newRule(write...).groups(legacyGroup).resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets").build(),
		newRule("create").groups(legacyGroup).resources("serviceaccounts/token").build(),
		newRule(write...).groups(legacyGroup, eventsGroup).resources("events").build(),
		newRule(write...).groups(appsGroup).resources(
			"statefulsets", "statefulsets/scale",
			"daemonsets",
			"deployments", "deployments/scale", "deployments/rollback",
			"replicasets", "replicasets/scale").build(),
		newRule(write...).groups(autoscalingGroup).resources("horizontalpodautoscalers").build(),
		newRule(write...).groups(batchGroup).resources("jobs", "cronjobs").build(),
		newRule(write...).groups(extensionsGroup).resources("daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "ingresses",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale",
			"networkpolicies").build(),
		newRule(write...).groups(policyGroup).resources("poddisruptionbudgets").build(),
		newRule(write...).groups(networkingGroup).resources("networkpolicies", "ingresses").build(),
		newRule(readWrite...).groups(coordinationGroup).resources("leases").build(),
		newRule(write...).groups(resourceGroup).resources("resourceclaims", "resourceclaimtemplates").build(),
	}
}

// nodeRules is what a kubelet may do: register and update its Node and
// Lease, read the pods (and their secrets and configmaps) it runs, report
// pod status, create and delete (mirror) pods, and record events.
func nodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("create").groups(authenticationGroup).resources("tokenreviews").build(),
		newRule("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews").build(),
		newRule(read...).groups(legacyGroup).resources("services").build(),
		newRule("create", "get", "list", "watch").groups(legacyGroup).resources("nodes").build(),
		newRule("update", "patch").groups(legacyGroup).resources("nodes/status").build(),
		newRule("update", "patch").groups(legacyGroup).resources("nodes").build(),
		newRule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").build(),
		newRule(read...).groups(legacyGroup).resources("pods").build(),
		newRule("create", "delete").groups(legacyGroup).resources("pods").build(),
		newRule("update", "patch").groups(legacyGroup).resources("pods/status").build(),
		newRule("create").groups(legacyGroup).resources("pods/eviction").build(),
		newRule("get", "list", "watch").groups(legacyGroup).resources("secrets", "configmaps").build(),
		newRule("get").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").build(),
		newRule("get").groups(legacyGroup).resources("endpoints").build(),
		newRule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").build(),
		newRule("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases").build(),
		newRule("get").groups(storageGroup).resources("volumeattachments").build(),
		newRule("create").groups(legacyGroup).resources("serviceaccounts/token").build(),
		newRule("get", "update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status").build(),
		newRule("get", "watch", "list").groups(storageGroup).resources("csidrivers").build(),
		newRule("get", "create", "update", "patch", "delete").groups(storageGroup).resources("csinodes").build(),
		newRule("get", "list", "watch").groups(nodeGroup).resources("runtimeclasses").build(),
		newRule("get").groups(resourceGroup).resources("resourceclaims").build(),
		newRule("deletecollection").groups(resourceGroup).resources("resourceslices").build(),
		newRule("get").groups(legacyGroup).resources("serviceaccounts").build(),
	}
}

// schedulerRules is what kube-scheduler may do: read what it schedules on,
// bind pods (pods/binding), update pod status (PodScheduled), and record
// events.
func schedulerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		eventsRule(),
		newRule("create").groups(coordinationGroup).resources("leases").build(),
		newRule("get", "update", "list", "watch").groups(coordinationGroup).resources("leases").names("kube-scheduler").build(),
		newRule(readWrite...).groups(coordinationGroup).resources("leasecandidates").build(),
		newRule(read...).groups(legacyGroup).resources("nodes").build(),
		newRule("get", "list", "watch", "delete").groups(legacyGroup).resources("pods").build(),
		newRule("create").groups(legacyGroup).resources("pods/binding", "bindings").build(),
		newRule("patch", "update").groups(legacyGroup).resources("pods/status").build(),
		newRule(read...).groups(legacyGroup).resources("services", "replicationcontrollers").build(),
		newRule(read...).groups(appsGroup, extensionsGroup).resources("replicasets").build(),
		newRule(read...).groups(appsGroup).resources("statefulsets").build(),
		newRule(read...).groups(policyGroup).resources("poddisruptionbudgets").build(),
		newRule(read...).groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").build(),
		newRule("create").groups(authenticationGroup).resources("tokenreviews").build(),
		newRule("create").groups(authorizationGroup).resources("subjectaccessreviews").build(),
		newRule(read...).groups(storageGroup).resources("csinodes").build(),
		newRule("get", "list", "watch").groups(storageGroup).resources("volumeattachments").build(),
		newRule(read...).groups(legacyGroup).resources("namespaces").build(),
		newRule(read...).groups(storageGroup).resources("csidrivers").build(),
		newRule(read...).groups(storageGroup).resources("csistoragecapacities").build(),
		newRule(read...).groups(resourceGroup).resources("deviceclasses").build(),
		newRule(readUpd...).groups(resourceGroup).resources("resourceclaims").build(),
		newRule(readUpd...).groups(resourceGroup).resources("resourceclaims/status").build(),
		newRule("update").groups(legacyGroup).resources("pods/finalizers").build(),
		newRule(read...).groups(resourceGroup).resources("resourceslices").build(),
		newRule("create", "delete").groups(resourceGroup).resources("resourceclaims").build(),
		newRule("update", "patch").groups(resourceGroup).resources("resourceclaims/binding").build(),
	}
}

// controllerManagerRules are kube-controller-manager's own: its shared
// informers list and watch everything; it leads with a lease and records events.
func controllerManagerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		eventsRule(),
		newRule("create").groups(coordinationGroup).resources("leases").build(),
		newRule("get", "update").groups(coordinationGroup).resources("leases").names("kube-controller-manager").build(),
		newRule("create").groups(legacyGroup).resources("secrets", "serviceaccounts").build(),
		newRule("delete").groups(legacyGroup).resources("secrets").build(),
		newRule("get").groups(legacyGroup).resources("configmaps", "namespaces", "secrets", "serviceaccounts").build(),
		newRule("update").groups(legacyGroup).resources("secrets", "serviceaccounts").build(),
		newRule("create").groups(authenticationGroup).resources("tokenreviews").build(),
		newRule("create").groups(authorizationGroup).resources("subjectaccessreviews").build(),
		newRule("list", "watch").groups("*").resources("*").build(),
		newRule("create").groups(legacyGroup).resources("serviceaccounts/token").build(),
	}
}

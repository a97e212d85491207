package kubectle2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/internal/waittest"
)

// jobYAML is a Job of completions pods (parallelism 2) that each log a line
// and exit with code after a second, retried backoffLimit times.
func jobYAML(name string, completions int, code, backoffLimit string) string {
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: ` + name + `
spec:
  completions: ` + string(rune('0'+completions)) + `
  parallelism: 2
  backoffLimit: ` + backoffLimit + `
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox:1.36
        command: ["sh", "-c", "echo working; sleep 1; exit ` + code + `"]
`
}

// TestJobs runs Jobs with real kubectl: create job, get jobs columns, wait
// for the complete condition, describe with the controller's events, logs
// job/NAME, an applied Job whose pods fail reaching Failed, and delete
// taking the pods along.
func TestJobs(t *testing.T) {
	eachKubectl(t, func(t *testing.T, _ *cluster, k *kubectl, suffix string) {
		testCreateJob(t, k, "hello-"+suffix)
		testAppliedJobs(t, k, "batch-"+suffix, "broken-"+suffix)
	})
}

func testCreateJob(t *testing.T, k *kubectl, name string) {
	resources := tableRows(k.ok("api-resources", "--api-group=batch"))
	if got := rowFor(resources, 0, "jobs"); strings.Join(got, "|") != "jobs|batch/v1|true|Job" {
		t.Errorf("api-resources jobs row = %q", got)
	}
	if out := k.ok("create", "job", name, "--image=busybox:1.36", "--", "sh", "-c", "echo hello from the job; sleep 1"); out != "job.batch/"+name+" created\n" {
		t.Fatalf("create job = %q", out)
	}
	rows := tableRows(k.ok("get", "jobs"))
	if got := strings.Join(rows[0], "|"); got != "NAME|STATUS|COMPLETIONS|DURATION|AGE" {
		t.Fatalf("get jobs header = %q", got)
	}
	if out := k.ok("wait", "--for=condition=complete", "job/"+name, "--timeout=3m"); out != "job.batch/"+name+" condition met\n" {
		t.Fatalf("wait = %q", out)
	}
	row := rowFor(tableRows(k.ok("get", "job", name, "-o", "wide")), 0, name)
	if len(row) != 8 || row[1] != "Complete" || row[2] != "1/1" || row[5] != name || row[6] != "busybox:1.36" ||
		!strings.HasPrefix(row[7], "batch.kubernetes.io/controller-uid=") {
		t.Errorf("get job -o wide row = %q", row)
	}
	desc := k.ok("describe", "job", name)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`Pods Statuses:\s+0 Active \(0 Ready\) / 1 Succeeded / 0 Failed`),
		regexp.MustCompile(`Normal\s+SuccessfulCreate\s+.*job-controller\s+Created pod: ` + name + `-[a-z0-9]{5}`),
		regexp.MustCompile(`Normal\s+Completed\s+.*job-controller\s+Job completed`),
	} {
		if !want.MatchString(desc) {
			t.Errorf("describe job lacks %s:\n%s", want, desc)
		}
	}
	// the simulated runtime logs its own start line first
	if out := k.ok("logs", "job/"+name); out != "hello from the job\n" {
		t.Errorf("logs job/%s = %q", name, out)
	}
	k.ok("delete", "job", name)
	waittest.EventuallyEvery(t, "the job's pods deleted", poll, waitLong, func() (bool, string) {
		out := k.ok("get", "pods", "-l", "job-name="+name, "-o", "name")
		return out == "", out
	})
}

func testAppliedJobs(t *testing.T, k *kubectl, good, broken string) {
	f := k.writeFile(good+".yaml", jobYAML(good, 3, "0", "6")+"---\n"+jobYAML(broken, 1, "1", "0"))
	if out := k.ok("apply", "-f", f); out != "job.batch/"+good+" created\njob.batch/"+broken+" created\n" {
		t.Fatalf("apply = %q", out)
	}
	k.ok("wait", "--for=condition=complete", "job/"+good, "--timeout=3m")
	k.ok("wait", "--for=condition=failed", "job/"+broken, "--timeout=3m")
	rows := tableRows(k.ok("get", "jobs"))
	if r := rowFor(rows, 0, good); len(r) != 5 || r[1] != "Complete" || r[2] != "3/3" {
		t.Errorf("get jobs row %q", r)
	}
	if r := rowFor(rows, 0, broken); len(r) != 5 || r[1] != "Failed" || r[2] != "0/1" {
		t.Errorf("get jobs row %q", r)
	}
	desc := k.ok("describe", "job", broken)
	if !regexp.MustCompile(`Warning\s+BackoffLimitExceeded\s+.*job-controller\s+Job has reached the specified backoff limit`).MatchString(desc) {
		t.Errorf("describe job lacks BackoffLimitExceeded:\n%s", desc)
	}
	k.ok("delete", "-f", f)
}

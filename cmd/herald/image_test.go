package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHealthcheck runs herald healthcheck against a server answering
// /healthz with each status.
func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	var asked string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.URL.Path
		w.WriteHeader(status)
	}))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	env := func(addr string) func(string) string {
		return func(name string) string {
			if name == "HERALD_ADDR" {
				return addr
			}
			return ""
		}
	}
	ctx := context.Background()

	for _, addr := range []string{"127.0.0.1:" + port, "0.0.0.0:" + port, ":" + port} {
		var out bytes.Buffer
		if code := run(ctx, []string{"healthcheck"}, env(addr), &out, io.Discard); code != 0 {
			t.Errorf("HERALD_ADDR=%s: exit %d, want 0", addr, code)
		}
		if asked != "/healthz" {
			t.Errorf("HERALD_ADDR=%s: asked %q, want /healthz", addr, asked)
		}
	}
	if code := run(ctx, []string{"healthcheck", "-path", "/readyz", "-addr", "127.0.0.1:" + port}, env(""), io.Discard, io.Discard); code != 0 || asked != "/readyz" {
		t.Errorf("-path /readyz: exit %d, asked %q", code, asked)
	}

	status = http.StatusServiceUnavailable
	var errOut bytes.Buffer
	if code := run(ctx, []string{"healthcheck"}, env("127.0.0.1:"+port), io.Discard, &errOut); code != 1 {
		t.Errorf("503: exit %d, want 1", code)
	}
	if !strings.Contains(errOut.String(), "503") {
		t.Errorf("503: stderr %q does not name the status", errOut.String())
	}

	srv.Close()
	if code := run(ctx, []string{"healthcheck"}, env("127.0.0.1:"+port), io.Discard, io.Discard); code != 1 {
		t.Errorf("nothing listening: exit %d, want 1", code)
	}
	if code := run(ctx, []string{"healthcheck", "-path", "/metrics"}, env(""), io.Discard, io.Discard); code != 2 {
		t.Errorf("-path /metrics: exit %d, want 2", code)
	}
}

// TestImage builds the container image with podman (deploy/build-image.sh),
// checks its user and HEALTHCHECK, runs it read-only with a volume for its
// data, and waits for /readyz to
// answer 200 and the image's HEALTHCHECK to pass. It skips, with the
// reason, where podman is missing or cannot run containers.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and an image")
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skipf("podman is not installed (apt-get install podman): %v", err)
	}
	if out, err := exec.Command(podman, "info").CombinedOutput(); err != nil {
		t.Skipf("podman cannot run here: podman info: %v: %s", err, bytes.TrimSpace(out))
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	tag := "localhost/herald-test:" + hex.EncodeToString(suffix)

	build := exec.Command(filepath.Join("..", "..", "deploy", "build-image.sh"), tag)
	build.Env = append(build.Environ(), "HERALD_IMAGE_ENGINE="+podman)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build-image.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", tag).Run() })

	out, err := exec.Command(podman, "image", "inspect", "--format", "{{.Config.User}} {{.HealthCheck.Test}}", tag).CombinedOutput()
	if err != nil {
		t.Fatalf("podman image inspect: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "10001:10001 ") || !strings.Contains(got, "healthcheck") {
		t.Errorf("image user and healthcheck = %q, want user 10001:10001 and herald healthcheck", got)
	}

	// The host's network, on a free port: no port mapping to set up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	name := "herald-test-" + hex.EncodeToString(suffix)
	// A volume for the data: podman fills it from the image's /data,
	// owned by the image's user. The healthcheck runs once, below, not on
	// a timer (timers need systemd).
	runArgs := []string{"run", "-d", "--name", name, "--read-only",
		"-v", name + ":/data", "--network", "host", "--health-interval", "disable",
		"-e", "HERALD_ADDR=" + addr, tag}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command(podman, "logs", name).CombinedOutput()
			t.Logf("container log:\n%s", logs)
		}
		_ = exec.Command(podman, "rm", "-f", "-t", "5", name).Run()
		_ = exec.Command(podman, "volume", "rm", "-f", name).Run()
	})
	var global []string // podman's own flags, before the command
	runOut, err := exec.Command(podman, runArgs...).CombinedOutput()
	if err != nil && sandboxed(runOut) {
		// A sandbox without CAP_SYS_RESOURCE cannot raise the container's
		// limits to the runtime's defaults, and crun refuses hybrid
		// cgroups: runc with limits within the host's own runs there.
		runc, lerr := exec.LookPath("runc")
		if lerr != nil {
			t.Skipf("podman cannot start containers here and runc is not installed (apt-get install runc): %v: %s",
				err, bytes.TrimSpace(runOut))
		}
		_ = exec.Command(podman, "rm", "-f", name).Run()
		var nofile syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
			t.Fatal(err)
		}
		global = []string{"--runtime", runc}
		limits := []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Max, nofile.Max), "--ulimit", "nproc=4096:4096"}
		runArgs = append(append([]string{runArgs[0]}, limits...), runArgs[1:]...)
		runOut, err = exec.Command(podman, append(global, runArgs...)...).CombinedOutput()
		if err != nil && sandboxed(runOut) {
			t.Skipf("podman cannot start containers here, with crun or runc: podman run: %v: %s", err, bytes.TrimSpace(runOut))
		}
		t.Logf("podman runs the container with runc and the host's limits (crun could not)")
	}
	if err != nil {
		t.Fatalf("podman run: %v: %s", err, runOut)
	}

	ready := false
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			last = err.Error()
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = fmt.Sprintf("%s %s", resp.Status, body)
		if resp.StatusCode == http.StatusOK {
			ready = true
			break
		}
	}
	if !ready {
		t.Fatalf("/readyz never answered 200; last: %s", last)
	}
	if out, err := exec.Command(podman, append(global, "healthcheck", "run", name)...).CombinedOutput(); err != nil {
		t.Errorf("podman healthcheck run: %v: %s", err, out)
	}
}

// sandboxed reports whether podman run's output says the machine denies
// what the container runtime needs (limits, cgroups), rather than the
// image being wrong.
func sandboxed(out []byte) bool {
	return bytes.Contains(out, []byte("Operation not permitted")) ||
		bytes.Contains(out, []byte("operation not permitted")) ||
		bytes.Contains(out, []byte("cgroups in hybrid mode"))
}

package dra

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestClaimsRealAPIServer runs the acceptance flow (testClaims) against a
// real kube-apiserver on a real etcd, both started here on loopback, so
// that the API server validates the published ResourceSlices, the
// DeviceClasses and claims of deployments/kubernetes and the
// allocations. It needs the two binaries, named by MMK_KUBE_APISERVER and
// MMK_ETCD (deployments/kubernetes/test/build-apiserver.sh builds them
// from their Go modules); without them it is skipped. First the
// kustomize base's manifests go to the server as a server-side dry run
// (dryRunManifests).
func TestClaimsRealAPIServer(t *testing.T) {
	apiserver, etcd := os.Getenv("MMK_KUBE_APISERVER"), os.Getenv("MMK_ETCD")
	if apiserver == "" || etcd == "" {
		t.Skip("set MMK_KUBE_APISERVER and MMK_ETCD to a kube-apiserver and an etcd (deployments/kubernetes/test/build-apiserver.sh DIR builds both)")
	}
	cs := startAPIServer(t, apiserver, etcd)
	t.Run("manifests", func(t *testing.T) { dryRunManifests(t, cs) })
	testClaims(t, cs)
}

// freePorts are n distinct loopback ports free now: each is held until
// all are chosen.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// startProcess runs a server until the test ends; its output goes to a
// file the test names if it fails.
func startProcess(t *testing.T, dir, name string, argv ...string) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil && len(b) > 4000 {
				t.Logf("%s's log ends:\n%s", name, b[len(b)-4000:])
			} else if err == nil {
				t.Logf("%s's log:\n%s", name, b)
			}
		}
	})
}

// startAPIServer starts etcd and kube-apiserver on loopback with consumable
// capacity on (DRAConsumableCapacity), a static token for the test, and
// returns a client once the server is ready and has its default namespace.
func startAPIServer(t *testing.T, apiserver, etcd string) kubernetes.Interface {
	t.Helper()
	dir := t.TempDir()
	ports := freePorts(t, 3)
	client, peer, secure := ports[0], ports[1], ports[2]
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	startProcess(t, dir, "etcd", etcd, "--name=mmk", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL, "--initial-cluster=mmk="+peerURL)

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "mmk-test-token"
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startProcess(t, dir, "kube-apiserver", apiserver, "--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", secure), "--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+tokens, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+keyFile,
		"--service-account-signing-key-file="+keyFile, "--service-cluster-ip-range=10.96.0.0/24",
		"--feature-gates=DRAConsumableCapacity=true")

	cs, err := kubernetes.NewForConfig(&rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", secure), BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, testNS, metav1.GetOptions{})
		if err == nil {
			if body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err == nil && string(body) == "ok" {
				return cs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready after 90 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

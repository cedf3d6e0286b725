package dra

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// kustomizeResources are the resources deployments/kubernetes's
// kustomization.yaml lists.
func kustomizeResources(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deployments", "kubernetes", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Resources  []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml is a %s %s", k.APIVersion, k.Kind)
	}
	return k.Resources
}

// TestKustomizationBase: deployments/kubernetes is a kustomize base of
// the driver (kubectl apply -k): its resources are the driver's
// manifests, every object of them decodes, and the examples (claim
// templates, pods) stay out (issue 37, item 9).
func TestKustomizationBase(t *testing.T) {
	res := kustomizeResources(t)
	if want := []string{"daemonset.yaml", "deviceclasses.yaml"}; !slices.Equal(res, want) {
		t.Errorf("resources %v, want %v", res, want)
	}
	var kinds []string
	for _, r := range res {
		for _, o := range manifests(t, r) {
			kinds = append(kinds, fmt.Sprintf("%T", o))
		}
	}
	for _, want := range []string{"*v1.Namespace", "*v1.ServiceAccount", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.DaemonSet", "*v1.DeviceClass"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("the base has no %s: %v", want, kinds)
		}
	}
}

// dryRunManifests sends every object of the kustomize base to the API
// server as a server-side dry run, which validates and admits it as a
// create would, and stores nothing. The base's namespace is created
// first (a dry-run namespace does not let its objects be admitted).
func dryRunManifests(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, r := range kustomizeResources(t) {
		for _, o := range manifests(t, r) {
			var err error
			switch o := o.(type) {
			case *corev1.Namespace:
				_, err = cs.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
			case *corev1.ServiceAccount:
				_, err = cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, dry)
			case *rbacv1.ClusterRole:
				_, err = cs.RbacV1().ClusterRoles().Create(ctx, o, dry)
			case *rbacv1.ClusterRoleBinding:
				_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, o, dry)
			case *appsv1.DaemonSet:
				_, err = cs.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, dry)
			case *resourceapi.DeviceClass:
				_, err = cs.ResourceV1().DeviceClasses().Create(ctx, o, dry)
			default:
				t.Errorf("%s: no dry run for a %T", r, o)
				continue
			}
			if err != nil {
				t.Errorf("%s: %s: the API server refuses it: %v", r, objectName(o), err)
			}
		}
	}
}

// objectName is an object's type and name.
func objectName(o runtime.Object) string {
	if m, ok := o.(metav1.Object); ok {
		return fmt.Sprintf("%T %s", o, m.GetName())
	}
	return fmt.Sprintf("%T", o)
}

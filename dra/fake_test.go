package dra

import (
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// TestClaimsFakeAPI runs the acceptance flow (testClaims) on client-go's
// fake clientset: an object tracker that stores and watches objects but
// validates none of them (the real API server's test does:
// TestClaimsRealAPIServer).
func TestClaimsFakeAPI(t *testing.T) {
	testClaims(t, fake.NewClientset())
}

package jobs

import (
	"regexp"
	"strings"
	"testing"
)

// TestDNSNames: isDNSLabel and isDNSSubdomain take exactly the names
// the bounded patterns they replace took (lengths at and around the
// bounds, ends and characters each pattern refuses).
func TestDNSNames(t *testing.T) {
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	subdomain := regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
	var names []string
	for _, n := range []int{0, 1, 2, 61, 62, 63, 64, 251, 252, 253, 254, 300} {
		for _, mid := range []string{"a", "-", ".", "A", "_"} {
			if n == 0 {
				names = append(names, "")
				continue
			}
			body := strings.Repeat(mid, max(n-2, 0))
			for _, ends := range [][2]string{{"a", "z"}, {"-", "a"}, {"a", "-"}, {"0", "."}, {"a", "9"}} {
				names = append(names, (ends[0] + body + ends[1])[:n])
			}
		}
	}
	names = append(names, "kube-system", "default", "my.claim-0", "a..b", "é", "a\n")
	for _, s := range names {
		if got, want := isDNSLabel(s), label.MatchString(s); got != want {
			t.Errorf("isDNSLabel(%q, %d bytes) = %v, the pattern %v", s, len(s), got, want)
		}
		if got, want := isDNSSubdomain(s), subdomain.MatchString(s); got != want {
			t.Errorf("isDNSSubdomain(%q, %d bytes) = %v, the pattern %v", s, len(s), got, want)
		}
	}
}

// TestValidClaimUID: a claim's UID as the job's spec and the API's path
// both take it is what the API's bounded pattern took.
func TestValidClaimUID(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9._:@+-]{1,128}$`)
	for _, s := range []string{"", "a", "0b5e1c7e-7d2f-4d4e-9a51-0a1b2c3d4e5f", "ns/name", "a b", "é",
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129), "x@y:z+._-"} {
		if got, want := ValidClaimUID(s), pattern.MatchString(s); got != want {
			t.Errorf("ValidClaimUID(%q, %d bytes) = %v, the pattern %v", s, len(s), got, want)
		}
	}
}

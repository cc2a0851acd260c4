package lifecycle

import (
	"strings"
	"testing"
)

func TestTmpfsOptions(t *testing.T) {
	got := strings.Join(TmpfsOptions(64<<20, "1000", "1777"), ",")
	for _, o := range []string{"rw", "noexec", "nosuid", "nodev", "size=67108864", "uid=1000", "gid=1000", "mode=1777"} {
		if !strings.Contains(","+got+",", ","+o+",") {
			t.Errorf("TmpfsOptions = %q, missing %q", got, o)
		}
	}
	if got := strings.Join(TmpfsOptions(1024, "", "0755"), ","); got != "rw,noexec,nosuid,nodev,size=1024,mode=0755" {
		t.Errorf("TmpfsOptions without user = %q", got)
	}
}

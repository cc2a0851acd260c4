//go:build integration

package integration

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Extensions of the certificates tlsCA.issue makes: a server certificate
// for the loopback address, and a client certificate.
const (
	serverCertExt = "subjectAltName=IP:127.0.0.1,DNS:localhost\n" +
		"extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n"
	clientCertExt = "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n"
)

// A tlsCA is a certificate authority made with openssl for the tests: its
// certificate (ca.pem) and key (ca-key.pem) in Dir. Its keys are ECDSA
// P-256 (quick to make), its certificates valid for two days.
type tlsCA struct {
	Dir string
}

// newTLSCA makes a certificate authority called name in dir, which must
// exist.
func newTLSCA(dir, name string) (*tlsCA, error) {
	ca := &tlsCA{Dir: dir}
	err := openssl(dir, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
		"-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2", "-subj", "/CN="+name,
		"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
	if err != nil {
		return nil, fmt.Errorf("making the CA %s: %w", name, err)
	}
	return ca, nil
}

// cert returns the path of the CA's certificate.
func (ca *tlsCA) cert() string { return filepath.Join(ca.Dir, "ca.pem") }

// issue writes into dir (made if missing) cert.pem and key.pem, a key and
// a certificate for common name cn with the extensions ext (an openssl
// extfile, such as serverCertExt), signed by ca, and ca.pem, the CA's
// certificate: the layout DOCKER_CERT_PATH and dockerd's --tls* flags
// expect.
func (ca *tlsCA) issue(dir, cn, ext string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("issuing %s: %w", cn, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return fmt.Errorf("issuing %s: %w", cn, err)
	}
	extFile := filepath.Join(dir, "ext.cnf")
	if err := os.WriteFile(extFile, []byte(ext), 0o600); err != nil {
		return fmt.Errorf("issuing %s: %w", cn, err)
	}
	defer os.Remove(extFile)
	csr := filepath.Join(dir, "req.csr")
	defer os.Remove(csr)
	if err := openssl(dir, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
		"-keyout", "key.pem", "-out", csr, "-subj", "/CN="+cn); err != nil {
		return fmt.Errorf("issuing %s: %w", cn, err)
	}
	if err := openssl(dir, "x509", "-req", "-in", csr, "-CA", ca.cert(), "-CAkey", filepath.Join(ca.Dir, "ca-key.pem"),
		"-set_serial", serial.String(), "-days", "2", "-extfile", extFile, "-out", "cert.pem"); err != nil {
		return fmt.Errorf("issuing %s: %w", cn, err)
	}
	if err := copyFile(ca.cert(), filepath.Join(dir, "ca.pem")); err != nil {
		return fmt.Errorf("issuing %s: %w", cn, err)
	}
	return nil
}

// openssl runs openssl with args in dir, returning its output in the
// error when it fails.
func openssl(dir string, args ...string) error {
	cmd := exec.Command("openssl", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("openssl %s: %w\n%s", strings.Join(args[:1], " "), err, out)
	}
	return nil
}

// copyFile copies the file src to dst (mode 0644).
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

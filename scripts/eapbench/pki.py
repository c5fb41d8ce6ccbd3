"""The throwaway PKI (P-256) every server is configured with."""
import os
import subprocess


OPENSSL_CNF = """[req]
distinguished_name = dn
[dn]
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[v3_server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:radius.eap-bench.test
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[v3_client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


# The name in the server certificate the PKI makes (the lab's stations check it).
SERVER_NAME = "radius.eap-bench.test"


def make_pki(d, names):
    """CA, server cert, one client cert per name (CN = name), a second CA + client cert."""
    os.makedirs(d, exist_ok=True)
    cnf = os.path.join(d, "openssl.cnf")
    with open(cnf, "w") as f:
        f.write(OPENSSL_CNF)
    p = lambda name: os.path.join(d, name)

    def key(path):
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-out", path)
        os.chmod(path, 0o600)

    def ca(name, cn):
        key(p(f"{name}.key"))
        openssl("req", "-new", "-x509", "-key", p(f"{name}.key"), "-subj", f"/CN={cn}",
                "-days", "30", "-config", cnf, "-extensions", "v3_ca", "-out", p(f"{name}.crt"))

    def leaf(name, cn, issuer, ext):
        key(p(f"{name}.key"))
        openssl("req", "-new", "-key", p(f"{name}.key"), "-subj", f"/CN={cn}", "-config", cnf,
                "-out", p(f"{name}.csr"))
        openssl("x509", "-req", "-in", p(f"{name}.csr"), "-CA", p(f"{issuer}.crt"), "-CAkey",
                p(f"{issuer}.key"), "-set_serial", str(int.from_bytes(os.urandom(8), "big")),
                "-days", "30", "-extfile", cnf, "-extensions", ext, "-out", p(f"{name}.crt"))
        os.remove(p(f"{name}.csr"))

    ca("ca", "eap-bench CA")
    leaf("server", SERVER_NAME, "ca", "v3_server")
    # The chain file the servers present: leaf then CA.
    with open(p("server-chain.crt"), "w") as out:
        out.write(open(p("server.crt")).read() + open(p("ca.crt")).read())
    for name in names:
        leaf(f"client-{name}", name, "ca", "v3_client")
    ca("other-ca", "eap-bench other CA")
    leaf("rogue-client", names[0], "other-ca", "v3_client")
    return {
        "ca": p("ca.crt"), "server_cert": p("server-chain.crt"), "server_key": p("server.key"),
        "client": lambda n: (p(f"client-{n}.crt"), p(f"client-{n}.key")),
        "rogue": (p("rogue-client.crt"), p("rogue-client.key")),
    }

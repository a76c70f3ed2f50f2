"""`fbo-flower`: one command per role to stand a federation up (docs/federation.md).

    fbo-flower server-init DIR --name server.example.org [--name 10.0.0.5] [--port 8000]
        the server's CA, its TLS certificate for every name the sites dial, the Flower
        configuration the experimenter's `flwr` reads, and DIR/superlink.sh
    fbo-flower site-init DIR --agent 3 --superlink server.example.org:8000 --ca ca.crt --spec SPEC
        the site's key pair (DIR/site.key stays; DIR/site.key.pub goes to the server) and
        DIR/supernode.sh, the site's one command
    fbo-flower register SERVER_DIR site.key.pub
        lets that site in (`flwr supernode register`, with SERVER_DIR's configuration)
    fbo-flower status SPEC OUT
        the units done and missing, and each running unit's last round (as `fbo run --status`)

Keys and certificates are made with `cryptography` (installed with flwr): no openssl or
ssh-keygen needed. Nothing existing is overwritten: a second `init` into the same folder is
refused, naming the file.
"""

import argparse
import datetime
import ipaddress
import os
import pathlib
import shlex
import subprocess
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

FEDERATION = "fbo"  # the name of the SuperLink in the experimenter's Flower configuration


def _write_new(path, data, mode=0o644):
    """Writes a file that must not exist yet (never replaces a key or a certificate)."""
    path = pathlib.Path(path)
    if path.exists():
        raise SystemExit(f"fbo-flower: {path} exists already; remove it or choose another folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


def _pem_key(key):
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _san(names):
    """Subject alternative names: an IP address as such, anything else as a DNS name."""
    out = []
    for n in names:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            out.append(x509.DNSName(n))
    return x509.SubjectAlternativeName(out)


# The SuperLink's own processes (its SuperExec, which starts the ServerApp) dial it over TLS
# on the loopback, so its certificate names the loopback too, whatever names the sites dial.
LOOPBACK = ["127.0.0.1", "localhost"]


def _certificates(names, days):
    """A CA and the server's certificate signed by it, valid for `names` (what sites dial)
    and for the loopback (what the SuperLink's own processes dial)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fbo federation CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA384())
    )
    key = ec.generate_private_key(ec.SECP384R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(_san(list(dict.fromkeys(names + LOOPBACK))), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA384())
    )
    pem = serialization.Encoding.PEM
    return _pem_key(ca_key), ca.public_bytes(pem), _pem_key(key), cert.public_bytes(pem)


def _script(path, lines):
    text = "#!/usr/bin/env bash\n# Written by fbo-flower; docs/federation.md.\nset -euo pipefail\n"
    _write_new(path, text + "\n".join(lines) + "\n", 0o755)
    return path


def server_init(args):
    d = pathlib.Path(args.dir).resolve()
    names = args.name
    ca_key, ca, key, cert = _certificates(names, args.days)
    _write_new(d / "ca.key", ca_key, 0o600)
    _write_new(d / "ca.crt", ca)
    _write_new(d / "server.key", key, 0o600)
    _write_new(d / "server.pem", cert)
    # The experimenter's `flwr` (run, log, supernode register) dials the same API the sites do.
    _write_new(
        d / "flwr-home" / "config.toml",
        f'[superlink]\ndefault = "{FEDERATION}"\n\n[superlink.{FEDERATION}]\n'
        f'address = "{names[0]}:{args.port}"\nroot-certificates = "{d / "ca.crt"}"\n',
    )
    link = _script(
        d / "superlink.sh",
        [
            "# The SuperLink: TLS with this folder's certificate, only registered sites admitted,",
            f"# listening on every interface at port {args.port} (sites dial {names[0]}:{args.port}).",
            f"exec flower-superlink --ssl-ca-certfile {shlex.quote(str(d / 'ca.crt'))} \\",
            f"    --ssl-certfile {shlex.quote(str(d / 'server.pem'))} --ssl-keyfile {shlex.quote(str(d / 'server.key'))} \\",
            "    --enable-supernode-auth --disable-runtime-dependency-installation \\",
            f"    --host {args.host} --port {args.port} --database {shlex.quote(str(d / 'link.db'))} \"$@\"",
        ],
    )
    print(f"""fbo-flower: the server's folder is {d}
  send to every site: {d / 'ca.crt'}  (never ca.key or server.key)
  start the SuperLink: {link}
  let a site in (its site.key.pub):  fbo-flower register {d} site3.key.pub
  run an experiment:  FLWR_HOME={d / 'flwr-home'} flwr run integrations/flower {FEDERATION} \\
      --run-config 'spec="/server/spec.toml" out="/server/results/run"'
  follow it:  FLWR_HOME={d / 'flwr-home'} flwr log RUN_ID {FEDERATION}   or   fbo-flower status SPEC OUT""")


def site_init(args):
    d = pathlib.Path(args.dir).resolve()
    key = ec.generate_private_key(ec.SECP384R1())
    priv = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    pub = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    _write_new(d / "site.key", priv, 0o600)
    pub_path = _write_new(d / "site.key.pub", pub + f" fbo-agent-{args.agent}\n".encode())
    ca = pathlib.Path(args.ca).resolve()
    if not ca.exists():
        raise SystemExit(f"fbo-flower: --ca {ca}: no such file (the server's ca.crt)")
    spec = pathlib.Path(args.spec).resolve()
    if not spec.exists():
        raise SystemExit(f"fbo-flower: --spec {spec}: no such file (the experiment's spec, as the server has it)")
    state = pathlib.Path(args.state).resolve() if args.state else d / "fbo-state"
    config = f'agent={args.agent} spec="{spec}" state="{state}"'
    if args.objective:
        config += f' objective="{args.objective}"'
    node = _script(
        d / "supernode.sh",
        [
            f"# Agent {args.agent}'s SuperNode: dials {args.superlink} (outgoing connections only),",
            "# checks the server against the federation's CA, and signs in with this site's key.",
            f"exec flower-supernode --root-certificates {shlex.quote(str(ca))} --superlink {args.superlink} \\",
            f"    --auth-supernode-private-key {shlex.quote(str(d / 'site.key'))} --port {args.port} \\",
            f"    --node-config {shlex.quote(config)} \"$@\"",
        ],
    )
    print(f"""fbo-flower: site folder {d} (agent {args.agent})
  send to the server: {pub_path}  (site.key stays here)
  once the server has registered it, start the site: {node}""")


def _wait_for_link(config, seconds):
    """Waits until the SuperLink named in `config` (the flwr configuration server-init wrote)
    accepts connections: an administrator registers sites right after starting it, and it
    takes a few seconds to listen. Refuses, naming the address, after `seconds`."""
    import re
    import socket
    import time

    m = re.search(r'^address = "(.+):(\d+)"$', config.read_text(), re.MULTILINE)
    if m is None:
        raise SystemExit(f"fbo-flower: {config} has no SuperLink address; was it written by server-init?")
    host, port = m.group(1), int(m.group(2))
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection((host, port), timeout=2).close()
            return
        except OSError as e:
            if time.monotonic() >= deadline:
                raise SystemExit(
                    f"fbo-flower: the SuperLink at {host}:{port} does not answer after {seconds:g} s ({e}); "
                    "is superlink.sh running?"
                )
            time.sleep(0.5)


def register(args):
    d = pathlib.Path(args.server_dir).resolve()
    home = d / "flwr-home"
    if not (home / "config.toml").exists():
        raise SystemExit(f"fbo-flower: {home / 'config.toml'} missing: run fbo-flower server-init {d} first")
    _wait_for_link(home / "config.toml", args.wait)
    env = dict(os.environ, FLWR_HOME=str(home))
    r = subprocess.run(["flwr", "supernode", "register", str(args.key), FEDERATION], env=env)
    sys.exit(r.returncode)


def status(args):
    import fbo

    print(fbo.status(args.spec, args.out), end="")


def main(argv=None):
    p = argparse.ArgumentParser(prog="fbo-flower", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("server-init", help="the server's CA, certificate, Flower configuration and SuperLink command")
    s.add_argument("dir")
    s.add_argument("--name", action="append", required=True,
                   help="a name or IP address the sites dial (repeat for more); the first is the address given to sites (the certificate names 127.0.0.1 and localhost too)")
    s.add_argument("--port", type=int, default=8000, help="the SuperLink's port (default 8000)")
    s.add_argument("--host", default="0.0.0.0", help="the interface the SuperLink listens on (default: every one)")
    s.add_argument("--days", type=int, default=365, help="certificates' validity (default 365)")
    s.set_defaults(run=server_init)
    s = sub.add_parser("site-init", help="a site's key pair and its SuperNode command")
    s.add_argument("dir")
    s.add_argument("--agent", type=int, required=True, help="the fbo agent this site is (0-based)")
    s.add_argument("--superlink", required=True, help="the server's address as sites dial it, host:port")
    s.add_argument("--ca", required=True, help="the federation's ca.crt, as the server sent it")
    s.add_argument("--spec", required=True, help="the experiment's spec, this site's copy")
    s.add_argument("--state", help="where the site journals its evaluations (default DIR/fbo-state)")
    s.add_argument("--objective", help="module:function, the site's own Python objective (optional)")
    s.add_argument("--port", type=int, default=9094,
                   help="the SuperNode's local API port (default 9094; one per SuperNode on a machine)")
    s.set_defaults(run=site_init)
    s = sub.add_parser("register", help="admit a site's public key (flwr supernode register)")
    s.add_argument("server_dir")
    s.add_argument("key")
    s.add_argument("--wait", type=float, default=60.0,
                   help="seconds to wait for a SuperLink just started to listen (default 60)")
    s.set_defaults(run=register)
    s = sub.add_parser("status", help="the experiment's progress in its output folder")
    s.add_argument("spec")
    s.add_argument("out")
    s.set_defaults(run=status)
    args = p.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()

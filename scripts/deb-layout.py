#!/usr/bin/env python3
"""Lay out the Debian package tree of Portcullis from Cargo.toml's [package.metadata.deb]
(the table cargo-deb reads), for `scripts/deb --binary`: the assets at their
destinations with their modes, DEBIAN/control, conffiles and the maintainer scripts.

Paths: `target/release/portcullis` is the given binary; `deploy/debian/generated/...`
is read from --generated; anything else is relative to the repository. A glob source
needs a destination ending in "/". Depends: `$auto` is what dpkg-shlibdeps finds for the
binary (as cargo-deb does), or libc6 and libgcc-s1 when it cannot run.
"""

import argparse
import glob
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATED = "deploy/debian/generated/"


def shlibdeps(binary):
    """The shared-library dependencies of `binary`, as dpkg-shlibdeps computes them."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "debian"))
        with open(os.path.join(d, "debian", "control"), "w") as f:
            f.write("Source: portcullis\n\nPackage: portcullis\nArchitecture: any\n")
        try:
            out = subprocess.run(
                ["dpkg-shlibdeps", "-O", os.path.abspath(binary)],
                cwd=d, capture_output=True, text=True, check=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError):
            return "libc6, libgcc-s1"
    for line in out.splitlines():
        if line.startswith("shlibs:Depends="):
            return line.split("=", 1)[1]
    return "libc6, libgcc-s1"


def arch():
    try:
        return subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), "amd64")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--generated", required=True)
    p.add_argument("--stage", required=True)
    p.add_argument("--version")
    a = p.parse_args()

    with open(os.path.join(ROOT, "Cargo.toml"), "rb") as f:
        cargo = tomllib.load(f)
    meta = cargo["package"]["metadata"]["deb"]
    version = a.version or cargo["workspace"]["package"]["version"] + "-1"

    def source(path):
        if path.startswith("target/release/"):
            return [a.binary]
        if path.startswith(GENERATED):
            path = os.path.join(a.generated, path[len(GENERATED):])
        else:
            path = os.path.join(ROOT, path)
        found = sorted(glob.glob(path)) if "*" in path else [path]
        if not found:
            sys.exit(f"deb-layout: no file for asset {path}")
        return found

    installed = 0
    for src, dest, mode in meta["assets"]:
        files = source(src)
        for s in files:
            d = os.path.join(a.stage, dest)
            if dest.endswith("/"):
                d = os.path.join(d, os.path.basename(s))
            os.makedirs(os.path.dirname(d), exist_ok=True)
            shutil.copyfile(s, d)
            os.chmod(d, int(mode, 8))
            installed += os.path.getsize(d)

    debian = os.path.join(a.stage, "DEBIAN")
    os.makedirs(debian)
    scripts = os.path.join(ROOT, meta["maintainer-scripts"])
    for name in ("preinst", "postinst", "prerm", "postrm"):
        s = os.path.join(scripts, name)
        if os.path.exists(s):
            shutil.copyfile(s, os.path.join(debian, name))
            os.chmod(os.path.join(debian, name), 0o755)
    with open(os.path.join(debian, "conffiles"), "w") as f:
        f.write("".join(c + "\n" for c in meta["conf-files"]))
    depends = meta["depends"].replace("$auto", shlibdeps(a.binary))
    description = meta["extended-description"].split()
    summary = cargo["package"]["description"]
    body = []
    line = ""
    for word in description:
        if len(line) + len(word) + 1 > 78:
            body.append(" " + line)
            line = word
        else:
            line = f"{line} {word}".strip()
    body.append(" " + line)
    control = [
        f"Package: {meta['name']}",
        f"Version: {version}",
        f"Architecture: {arch()}",
        f"Maintainer: {meta['maintainer']}",
        f"Installed-Size: {installed // 1024}",
        f"Depends: {depends}",
        f"Recommends: {meta['recommends']}",
        f"Section: {meta['section']}",
        f"Priority: {meta['priority']}",
        f"Description: {summary}",
        *body,
    ]
    with open(os.path.join(debian, "control"), "w") as f:
        f.write("\n".join(control) + "\n")
    sums = []
    for dirpath, _, names in os.walk(a.stage):
        if dirpath.startswith(debian):
            continue
        for n in names:
            full = os.path.join(dirpath, n)
            with open(full, "rb") as f:
                digest = hashlib.md5(f.read()).hexdigest()
            sums.append(f"{digest}  {os.path.relpath(full, a.stage)}")
    with open(os.path.join(debian, "md5sums"), "w") as f:
        f.write("\n".join(sorted(sums)) + "\n")


if __name__ == "__main__":
    main()

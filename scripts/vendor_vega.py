"""Re-vendor the Vega-Lite runtime the web page draws interactive charts with.

The page has no build step and loads nothing from a CDN: the built, minified UMD files of
``vega``, ``vega-lite`` and ``vega-embed`` (from the npm registry, through ``npm`` itself)
are copied into ``src/baton/server/static/vendor/`` and shipped inside the package
(``pyproject.toml`` package-data). Next to them:

- ``LICENSES.txt``: the license text of every package npm installed for the three (the
  bundles inline some of them: vega-tooltip, vega-themes, vega-interpreter, d3 modules ...),
  each under its name and version;
- ``VERSIONS.json``: what was vendored, with each file's SHA-256, so a review sees exactly
  which bytes changed.

``//# sourceMappingURL`` comments are removed (the maps are not shipped, and a browser
would ask the server for them). Pinned versions below; change them here and run:

    .venv/bin/python scripts/vendor_vega.py

Exit status 0 when the files were written, 1 when npm failed.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "src" / "baton" / "server" / "static" / "vendor"
PACKAGES = {"vega": "6.4.0", "vega-lite": "6.4.3", "vega-embed": "7.3.0"}
FILES = {"vega": "build/vega.min.js", "vega-lite": "build/vega-lite.min.js", "vega-embed": "build/vega-embed.min.js"}
LICENSE_NAMES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "license", "license.md", "COPYING")
SOURCE_MAP = re.compile(r"\n?//# sourceMappingURL=\S+\s*$")


def npm_install(into: Path) -> None:
    (into / "package.json").write_text(json.dumps({"name": "baton-vendor", "version": "0.0.0", "private": True}))
    specs = [f"{name}@{version}" for name, version in PACKAGES.items()]
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--save-exact", *specs],
                   cwd=into, check=True)


def licenses(modules: Path) -> str:
    """Every installed package's license, sorted by name (scoped packages included)."""
    parts = []
    for manifest in sorted(modules.glob("**/package.json")):
        package = manifest.parent
        if package.parent.name != "node_modules" and package.parent.parent.name != "node_modules":
            continue  # a package.json inside a package (tests, fixtures), not a package
        try:
            meta = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not meta.get("name") or not meta.get("version"):
            continue
        text = next((p.read_text(encoding="utf-8", errors="replace") for n in LICENSE_NAMES if (p := package / n).is_file()), None)
        declared = meta.get("license") if isinstance(meta.get("license"), str) else ""
        parts.append(f"{'=' * 78}\n{meta['name']} {meta['version']} ({declared or 'see below'})\n{'=' * 78}\n"
                     f"{(text or 'No license file in the package; its package.json declares: ' + (declared or 'nothing')).strip()}\n")
    return "\n".join(dict.fromkeys(parts))  # a package installed twice at one version: once


def main() -> int:
    if shutil.which("npm") is None:
        print("npm is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="baton-vendor-") as tmp:
        work = Path(tmp)
        try:
            npm_install(work)
        except subprocess.CalledProcessError as exc:
            print(f"npm install failed: {exc}", file=sys.stderr)
            return 1
        modules = work / "node_modules"
        VENDOR.mkdir(parents=True, exist_ok=True)
        versions = {}
        for name, relative in FILES.items():
            installed = json.loads((modules / name / "package.json").read_text(encoding="utf-8"))["version"]
            text = SOURCE_MAP.sub("\n", (modules / name / relative).read_text(encoding="utf-8"))
            target = VENDOR / Path(relative).name
            target.write_text(text, encoding="utf-8")
            versions[name] = {"version": installed, "file": target.name, "sha256": hashlib.sha256(target.read_bytes()).hexdigest()}
        (VENDOR / "LICENSES.txt").write_text(
            "Third-party code vendored into baton/server/static/vendor/ (scripts/vendor_vega.py).\n"
            "The minified files bundle some of the packages below; every package npm installed for them is listed.\n\n"
            + licenses(modules), encoding="utf-8")
        (VENDOR / "VERSIONS.json").write_text(json.dumps(versions, indent=2) + "\n", encoding="utf-8")
    for name, info in versions.items():
        print(f"{name} {info['version']}: {info['file']} ({(VENDOR / info['file']).stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

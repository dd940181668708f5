"""An in-memory twin of `mvn ... dependency:copy-dependencies` for the unit tests of `hosting.maven`: it
reads the pom the resolver wrote, fetches the one dependency's jar from the pom's repository (the tests'
local artifact server) into `-DoutputDirectory`, and answers a missing jar as Maven does (its `[ERROR]`
line, exit 1). Each call's argv is appended to `$FAKE_MVN_LOG` when set, for the tests to read.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def main(argv: list[str]) -> int:
    if log := os.environ.get("FAKE_MVN_LOG"):
        with open(log, "a") as out:
            out.write(json.dumps(argv) + "\n")
    pom = ET.parse(argv[argv.index("-f") + 1]).getroot()
    output = Path(next(a for a in argv if a.startswith("-DoutputDirectory=")).split("=", 1)[1])
    group, artifact, version = (
        pom.findtext(f"m:dependencies/m:dependency/m:{f}", namespaces=NS) or ""
        for f in ("groupId", "artifactId", "version")
    )
    repo = pom.findtext("m:repositories/m:repository/m:url", namespaces=NS) or "https://repo.maven.apache.org/maven2"
    url = f"{repo.rstrip('/')}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.jar"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            data = response.read()
    except urllib.error.HTTPError:
        print(
            "\x1b[0m[ERROR] Failed to execute goal on project plugin-x: Could not resolve dependencies for project "
            f"sparklink.build:plugin-x:pom:0: Could not find artifact {group}:{artifact}:jar:{version} in "
            f"spec-build ({repo}) -> [Help 1]\n[ERROR] \n[ERROR] To see the full stack trace of the errors, re-run "
            "Maven with the -e switch."
        )
        return 1
    output.mkdir(parents=True, exist_ok=True)
    (output / f"{artifact}-{version}.jar").write_bytes(data)
    (output / "a-dependency-1.0.jar").write_bytes(b"dependency")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
